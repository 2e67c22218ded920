import { QUIET_WORDS } from "./plain-forms.js"

/** What main takes out of argv before oclif parses anything. */
export interface PreParsed {
  /** `--json` anywhere among stoat's own words (so usage errors can answer in JSON too). */
  readonly json: boolean
  /** `-h/--help` among stoat's own words, `stoat help [cmd]`, or no words at all. */
  readonly help: boolean
  /**
   * The words oclif parses: `--json` and help flags taken out, a global `-q` before the command
   * moved after it (every command takes `--quiet`), and for `exec`, `ssh` and `jobs start`
   * nothing after the VM name.
   */
  readonly rest: string[]
  /** `exec|ssh|jobs start [flags] <vm> <cmd...>`: the guest command, with an optional leading `--` dropped. */
  readonly guest: string[] | undefined
}

const HELP = new Set(["-h", "--help"])

/**
 * Commands whose trailing words are a guest command: after `words` positional words (the command
 * path and the VM), everything is the guest's, flags included. `valueFlags` are the command's own
 * flags that take the next word as their value (`--cwd /tmp`), so that word is not a positional.
 */
const GUEST_COMMANDS: Record<string, { readonly words: number; readonly valueFlags: ReadonlySet<string> }> = {
  exec: { words: 2, valueFlags: new Set(["--timeout"]) },
  ssh: { words: 2, valueFlags: new Set() },
  "jobs start": { words: 3, valueFlags: new Set(["--cwd", "--env"]) }
}

const guestCommandOf = (positionals: ReadonlyArray<string>) =>
  GUEST_COMMANDS[positionals[0] ?? ""] ?? GUEST_COMMANDS[positionals.slice(0, 2).join(" ")]

/**
 * Stoat's own words end at a `--` terminator and, for `exec`, `ssh` and `jobs start`, at the VM
 * name: everything after it is the guest command, flags included (`stoat exec dev ls -la`), so
 * `--json` or `-h` there belong to the guest too. Stoat's flags for those go before the VM name.
 */
export const preParse = (argv: ReadonlyArray<string>): PreParsed => {
  const rest: string[] = []
  const positionals: string[] = []
  let json = false
  let quiet = false
  let help = false
  let guest: string[] | undefined
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word === "--") {
      rest.push(...argv.slice(i))
      break
    }
    if (word === "--json") json = true
    else if (HELP.has(word)) help = true
    else if (positionals.length === 0 && QUIET_WORDS.has(word)) quiet = true
    else {
      rest.push(word)
      if (word.startsWith("-")) {
        if (guestCommandOf(positionals)?.valueFlags.has(word) && i + 1 < argv.length) rest.push(argv[++i]!)
        continue
      }
      positionals.push(word)
      const spec = guestCommandOf(positionals)
      if (spec !== undefined && positionals.length === spec.words) {
        const words = argv.slice(i + 1)
        guest = words[0] === "--" ? words.slice(1) : words
        break
      }
    }
  }
  const noWords = rest.length === 0
  if (quiet) rest.splice(rest.includes("--") ? rest.indexOf("--") : rest.length, 0, "--quiet")
  return { json, help: help || positionals[0] === "help" || noWords, rest, guest }
}

/** The words naming what `help` should explain: the command's positional words, without a leading `help`. */
export const helpTopic = (rest: ReadonlyArray<string>): string[] => {
  const end = rest.indexOf("--")
  const words = (end === -1 ? rest : rest.slice(0, end)).filter((word) => !word.startsWith("-"))
  return words[0] === "help" ? words.slice(1) : words
}

/** The reported `cmd` of the envelope: the command id, with subcommand groups reported by their group name. */
export const commandName = (argv: ReadonlyArray<string>): string => {
  const first = argv.find((word) => !word.startsWith("-")) ?? ""
  if (first === "new") return "create"
  if (first === "provision") return "apply"
  return first
}
