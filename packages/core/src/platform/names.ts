import { Order } from "effect"

/**
 * Lists of VMs and guests are in code-unit order of their names, as the original's sort.Strings
 * orders them; `localeCompare` would also cost every command ICU's collator start-up (~8 ms).
 */
export const byName: Order.Order<{ readonly name: string }> = Order.mapInput(
  Order.string,
  (item: { readonly name: string }) => item.name
)

/** Edit distance, for "did you mean" hints. */
export const levenshtein = (a: string, b: string): number => {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!
      row[j] = Math.min(above + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1))
      diagonal = above
    }
  }
  return row[b.length]!
}

/** The nearest candidate within a small distance, or undefined. */
export const closest = (name: string, candidates: ReadonlyArray<string>): string | undefined => {
  let best: string | undefined
  let bestDistance = Math.max(2, Math.floor(name.length / 3)) + 1
  for (const candidate of candidates) {
    const distance = levenshtein(name.toLowerCase(), candidate.toLowerCase())
    if (distance < bestDistance) {
      best = candidate
      bestDistance = distance
    }
  }
  return best
}

/** Recipe names (and their folders): lower-case letters, digits and '-', starting with a letter or digit. */
export const RECIPE_NAME = /^[a-z0-9][a-z0-9-]*$/

/**
 * The VM name grammar, the one every frontend and check uses: letters, digits, '.', '_' and '-',
 * starting with a letter or digit (no separator, so `vm:path` and file names stay unambiguous).
 */
export const VM_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/
export const VM_NAME_MAX = 64

/** Whether `text` is a name a VM may have (create adds the reserved names of validateVmName). */
export const isVmName = (text: string): boolean => text.length <= VM_NAME_MAX && VM_NAME.test(text)
