/** What main takes out of argv before oclif parses anything. */
export interface PreParsed {
  /** `--json` anywhere among stoat's own words (so usage errors can answer in JSON too). */
  readonly json: boolean
  /** `-h/--help` among stoat's own words, `stoat help [cmd]`, or no words at all. */
  readonly help: boolean
  /**
   * The words oclif parses: `--json` and help flags taken out, a global `-q` before the command
   * moved after it (every command takes `--quiet`), and for `exec` nothing after the VM name.
   */
  readonly rest: string[]
  /** `exec [flags] <vm> <cmd...>`: the guest command, with an optional leading `--` dropped. */
  readonly guest: string[] | undefined
}

const QUIET = new Set(["-q", "--quiet", "--no-interactive"])
/** exec's own flags that take a value in the next word, so that value is not read as the VM name. */
const EXEC_VALUE_FLAGS = new Set(["--timeout"])
const HELP = new Set(["-h", "--help"])

/**
 * Stoat's own words end at a `--` terminator and, for `exec`, at the VM name: everything after
 * it is the guest command, flags included (`stoat exec dev ls -la`), so `--json` or `-h` there
 * belong to the guest too. Stoat's flags for exec go before the VM name.
 */
export const preParse = (argv: ReadonlyArray<string>): PreParsed => {
  const rest: string[] = []
  let json = false
  let quiet = false
  let help = false
  let guest: string[] | undefined
  let command: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!
    if (word === "--") {
      rest.push(...argv.slice(i))
      break
    }
    if (word === "--json") json = true
    else if (HELP.has(word)) help = true
    else if (command === undefined && QUIET.has(word)) quiet = true
    else {
      rest.push(word)
      if (command === "exec" && EXEC_VALUE_FLAGS.has(word) && i + 1 < argv.length) rest.push(argv[++i]!)
      if (word.startsWith("-")) continue
      if (command === undefined) command = word
      else if (command === "exec") {
        const words = argv.slice(i + 1)
        guest = words[0] === "--" ? words.slice(1) : words
        break
      }
    }
  }
  const noWords = rest.length === 0
  if (quiet) rest.splice(rest.includes("--") ? rest.indexOf("--") : rest.length, 0, "--quiet")
  return { json, help: help || command === "help" || noWords, rest, guest }
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
