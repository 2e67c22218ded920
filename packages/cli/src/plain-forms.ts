/** The words that ask for quiet, wherever they stand (`--no-interactive` is the original's name). */
export const QUIET_WORDS: ReadonlySet<string> = new Set(["-q", "--quiet", "--no-interactive"])

/**
 * A command main serves without loading oclif (a third of start-up), with the same operation,
 * output and exit status as the oclif command (test/fast-paths.test.ts compares them):
 * - `ls` (`list`) with no flag but `--json` and the quiet words: what scripts and agents run most (P3);
 * - `up|start <vm>` with at most one of `--wait`/`--no-wait`: every millisecond before QEMU starts is the caller's (P4);
 * - `mcp` and `mcp serve` with no flags: what every MCP client spawns (P2).
 * Anything else is oclif's to parse.
 */
export type FastPath =
  | { readonly kind: "ls" }
  | { readonly kind: "up"; readonly vm: string; readonly wait: boolean | undefined; readonly quiet: boolean }
  | { readonly kind: "mcp" }

/**
 * The one place that decides whether a command line takes a fast path: `rest` and `help` as
 * `preParse` left them (so `--json` is already out, and a quiet word is `--quiet` after the command).
 */
export const fastPathOf = (rest: ReadonlyArray<string>, help: boolean): FastPath | undefined => {
  if (help) return undefined
  const words = rest.filter((word) => !QUIET_WORDS.has(word))
  if (words.length === 1 && (words[0] === "ls" || words[0] === "list")) return { kind: "ls" }
  if (words.join(" ") === "mcp" || words.join(" ") === "mcp serve") return { kind: "mcp" }
  if (words[0] !== "up" && words[0] !== "start") return undefined
  const flags = words.slice(1).filter((word) => word.startsWith("-"))
  const names = words.slice(1).filter((word) => !word.startsWith("-"))
  if (names.length !== 1 || flags.length > 1 || flags.some((flag) => flag !== "--wait" && flag !== "--no-wait"))
    return undefined
  return {
    kind: "up",
    vm: names[0]!,
    wait: flags[0] === undefined ? undefined : flags[0] === "--wait",
    quiet: words.length < rest.length
  }
}
