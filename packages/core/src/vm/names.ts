import { Order } from "effect"
import { isReservedDir } from "../platform/data-root.js"
import { InvalidSpec } from "../errors.js"

/**
 * Lists of VMs and guests are in code-unit order of their names, as the original's sort.Strings
 * orders them; `localeCompare` would also cost every command ICU's collator start-up (~8 ms).
 */
export const byName: Order.Order<{ readonly name: string }> = Order.mapInput(Order.string, (item: { readonly name: string }) => item.name)

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

const VM_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$/i

/** The VM name grammar, checked at create: also refuses Windows device names so a data root can move between systems. */
export const validateVmName = (name: string): InvalidSpec | undefined => {
  if (!VM_NAME.test(name)) {
    return new InvalidSpec({ message: `invalid VM name "${name}": use letters, digits, '.', '_' or '-', starting with a letter or digit`, subject: name })
  }
  if (WINDOWS_DEVICE.test(name)) return new InvalidSpec({ message: `invalid VM name "${name}": reserved device name`, subject: name })
  if (isReservedDir(name)) return new InvalidSpec({ message: `invalid VM name "${name}": reserved for the data root's own folders`, subject: name })
  if (name.length > 64) return new InvalidSpec({ message: `invalid VM name "${name}": at most 64 characters`, subject: name })
  return undefined
}

/**
 * The guest's hostname for a VM name (VM names may hold '_' and '.', and end in '-'): one
 * lower-case label of letters, digits and '-', at most 63 characters; "stoat" when nothing is left.
 */
export const guestHostname = (vmName: string): string => {
  const label = vmName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "")
  return label === "" ? "stoat" : label
}
