import { manifestCommands } from "./manifest.js"

/** Edits (insert, delete, replace) that turn `a` into `b`. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    previous = current
  }
  return previous[b.length]!
}

/**
 * The command a mistyped one most likely meant (`craete` → `create`, `file raed` → `file read`),
 * from the manifest oclif reads too; undefined when nothing is close. Off a terminal this is the
 * did-you-mean that @oclif/plugin-not-found only offers as a prompt.
 */
export const closestCommand = (words: ReadonlyArray<string>): string | undefined => {
  const ids = Object.entries(manifestCommands()).flatMap(([id, command]) => (command.hidden ? [] : [id, ...(command.aliases ?? [])]))
  const [first = "", second] = words
  // Within a topic (`file raed`) the topic's own words are compared; else the first word alone.
  const typed = second !== undefined && ids.some((id) => id.startsWith(`${first}:`)) ? `${first}:${second}` : first
  const scored = ids.map((id) => ({ id, edits: distance(typed, id) })).sort((a, b) => a.edits - b.edits)[0]
  // More edits than half the word is a different word, not a typo.
  return scored !== undefined && scored.edits <= Math.max(1, Math.floor(typed.length / 2)) ? scored.id.replaceAll(":", " ") : undefined
}
