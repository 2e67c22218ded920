import { Flags } from "@oclif/core"

/**
 * `--recipes a,b` or `--recipes a --recipes b` (the original's csv/repeat). Non-greedy: the
 * word after the value is the command's next argument (`create --recipes foo x1` names VM x1).
 */
export const recipesFlag = (description: string) => Flags.string({ description, multiple: true, multipleNonGreedy: true, delimiter: "," })

/** The recipe names of `--recipes` values; `--recipes ""` is the empty list. */
export const recipeNames = (values: ReadonlyArray<string>): string[] => values.map((value) => value.trim()).filter(Boolean)
