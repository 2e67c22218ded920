/** The words that ask for quiet, wherever they stand (`--no-interactive` is the original's name). */
export const QUIET_WORDS: ReadonlySet<string> = new Set(["-q", "--quiet", "--no-interactive"])

/**
 * The plain `up` forms main serves without oclif (see fastUp): `up|start <vm>` with at most one
 * of `--wait`/`--no-wait`, quiet words already taken out. Anything else is oclif's to parse.
 */
export const plainUp = (words: ReadonlyArray<string>): { readonly vm: string; readonly wait: boolean | undefined } | undefined => {
  if (words[0] !== "up" && words[0] !== "start") return undefined
  const flags = words.slice(1).filter((word) => word.startsWith("-"))
  const names = words.slice(1).filter((word) => !word.startsWith("-"))
  if (names.length !== 1 || flags.length > 1 || flags.some((flag) => flag !== "--wait" && flag !== "--no-wait")) return undefined
  return { vm: names[0]!, wait: flags[0] === undefined ? undefined : flags[0] === "--wait" }
}
