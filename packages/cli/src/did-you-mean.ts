import { levenshtein } from "@stoat/core/names"
import { manifestCommands } from "./manifest.js"

/**
 * The command a mistyped one most likely meant (`craete` → `create`, `file raed` → `file read`),
 * from the manifest oclif reads too; undefined when nothing is close. Off a terminal this is the
 * did-you-mean that @oclif/plugin-not-found only offers as a prompt.
 */
export const closestCommand = (words: ReadonlyArray<string>): string | undefined => {
  const ids = Object.entries(manifestCommands()).flatMap(([id, command]) =>
    command.hidden ? [] : [id, ...(command.aliases ?? [])]
  )
  const [first = "", second] = words
  // Within a topic (`file raed`) the topic's own words are compared; else the first word alone.
  const typed = second !== undefined && ids.some((id) => id.startsWith(`${first}:`)) ? `${first}:${second}` : first
  const scored = ids.map((id) => ({ id, edits: levenshtein(typed, id) })).sort((a, b) => a.edits - b.edits)[0]
  // More edits than half the word is a different word, not a typo.
  return scored !== undefined && scored.edits <= Math.max(1, Math.floor(typed.length / 2))
    ? scored.id.replaceAll(":", " ")
    : undefined
}
