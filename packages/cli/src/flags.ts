import { Flags } from "@oclif/core"

/**
 * `--recipes a,b` or `--recipes a --recipes b` (the original's csv/repeat). Non-greedy: the
 * word after the value is the command's next argument (`create --recipes foo x1` names VM x1).
 */
export const recipesFlag = (description: string) => Flags.string({ description, multiple: true, multipleNonGreedy: true, delimiter: "," })

/** The recipe names of `--recipes` values; `--recipes ""` is the empty list. */
export const recipeNames = (values: ReadonlyArray<string>): string[] => values.map((value) => value.trim()).filter(Boolean)

/** `--set recipe.param=value` (repeatable) as the update input's params table, or the flag at fault. */
export const paramTable = (values: ReadonlyArray<string>): Record<string, Record<string, string>> | { readonly bad: string } => {
  const table: Record<string, Record<string, string>> = {}
  for (const value of values) {
    const match = /^([a-z0-9][a-z0-9-]*)\.([a-z][a-z0-9_]*)=(.*)$/s.exec(value)
    if (!match) return { bad: value }
    ;(table[match[1]!] ??= {})[match[2]!] = match[3]!
  }
  return table
}

/** The environment variable a `--secret recipe.param` value comes from when no terminal can ask. */
export const secretEnvName = (recipe: string, param: string): string => `STOAT_SECRET_${recipe}_${param}`.toUpperCase().replaceAll("-", "_")

/** Go-style durations as the original took them (90s, 2m, 1m30s, 500ms), or plain seconds. */
export const parseDuration = (text: string): number | undefined => {
  const match = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/.exec(text)
  if (!match || text === "") return /^\d+$/.test(text) ? Number(text) : undefined
  const [, h, m, s, ms] = match
  return Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0) + Number(ms ?? 0) / 1000
}

/** `--timeout 2m` for the waits (`wait`, `up`): whole seconds, 1 to 600; anything else is a usage error. */
export const waitTimeoutFlag = (description: string) =>
  Flags.custom<number>({
    description,
    parse: async (text) => {
      const seconds = parseDuration(text)
      if (seconds === undefined || seconds <= 0) throw new Error(`expected a positive duration like 2m or 90s, got "${text}"`)
      return Math.min(600, Math.max(1, Math.ceil(seconds)))
    }
  })()
