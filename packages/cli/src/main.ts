// Only light modules at the top: `stoat -v` and oclif's startup must not load effect.
import { STOAT_VERSION } from "@stoat/core/version"
import { commandName, helpTopic, preParse } from "./argv.js"
import { cliState } from "./state.js"
import { plainUp, QUIET_WORDS } from "./plain-forms.js"
import { exitWhenWritten } from "./exit.js"

const reportJson = async (code: "usage" | "internal", message: string): Promise<void> => {
  const { writeJsonError } = await import("./json-error.js")
  writeJsonError(cliState.cmd, code, message)
}

/** A usage error: its envelope with `--json`, else the message and where help is (`stoat <cmd> --help` by default). */
const usageExit = async (message: string, { prefix = cliState.cmd, help = `stoat ${cliState.cmd ? `${cliState.cmd} ` : ""}--help` } = {}): Promise<never> => {
  if (cliState.json) await reportJson("usage", message)
  else process.stderr.write(`stoat: ${prefix ? `${prefix}: ` : ""}${message}\nSee '${help}'.\n`)
  return exitWhenWritten(2)
}

/** The words of an unknown command (@oclif/plugin-not-found gave up, off a terminal or declined): a did-you-mean. */
const unknownCommand = async (words: ReadonlyArray<string>): Promise<never> => {
  const { closestCommand } = await import("./did-you-mean.js")
  const typed = words.filter((word) => !word.startsWith("-"))
  const suggestion = closestCommand(typed)
  const shown = typed.slice(0, suggestion?.includes(" ") ? 2 : 1).join(" ")
  return usageExit(`unknown command '${shown}'${suggestion ? `; did you mean 'stoat ${suggestion}'?` : ""}`, { prefix: "", help: "stoat help" })
}

export const main = async (argv: string[]): Promise<void> => {
  // `-v/--version` only as the first word, plain text, whatever else is on the line.
  if (argv[0] === "-v" || argv[0] === "--version") {
    process.stdout.write(`stoat ${STOAT_VERSION}\n`)
    return
  }
  const { json, help, rest, guest } = preParse(argv)
  Object.assign(cliState, { json, guest, cmd: help ? "help" : commandName(rest) })
  const plain = rest.filter((word) => !QUIET_WORDS.has(word))
  if (!help && plain.length === 1 && (plain[0] === "ls" || plain[0] === "list")) {
    const { fastLs } = await import("./fast-paths.js")
    return fastLs(cliState.cmd, json)
  }
  const up = help ? undefined : plainUp(plain)
  if (up !== undefined) {
    const { fastUp } = await import("./fast-paths.js")
    return fastUp(cliState.cmd, up.vm, { wait: up.wait, quiet: plain.length < rest.length, json })
  }
  // What every client entry runs (`stoat mcp`), served without oclif: spawn-to-initialize is P2.
  if (!help && (plain.join(" ") === "mcp" || plain.join(" ") === "mcp serve")) {
    const { serveMcp } = await import("./mcp-serve.js")
    return serveMcp({})
  }
  // Loaded only now: `stoat -v`, plain `stoat ls` and plain `stoat mcp` never pay for oclif.
  // Its engine check loads semver (about 20 ms of every command's start-up) to test the Node version
  // the bin already runs on; the variable is dropped again so no child process inherits it.
  const skipEngineCheck = process.env["OCLIF_DISABLE_ENGINE_WARNING"] === undefined
  if (skipEngineCheck) process.env["OCLIF_DISABLE_ENGINE_WARNING"] = "1"
  const { Errors, flush, run } = await import("@oclif/core")
  if (skipEngineCheck) delete process.env["OCLIF_DISABLE_ENGINE_WARNING"]
  try {
    // `-h`, `--help` and no command at all are `stoat help [<cmd>]`, which answers in JSON too.
    await run(help ? ["help", ...helpTopic(rest)] : rest, import.meta.url)
    await flush()
  } catch (error) {
    if (error instanceof Errors.ExitError) return exitWhenWritten(error.oclif.exit ?? 1)
    const oclif = (error as { oclif?: { exit?: number } }).oclif
    // 127 is the not-found plugin's "not a stoat command".
    if (oclif?.exit === 127) return unknownCommand(rest)
    const message = (error as Error).message ?? String(error)
    if (oclif?.exit === 2 || /^(Nonexistent flag|Unexpected argument|Missing (\d+ )?required|Expected|Command .* not found|Parsing --)/m.test(message)) {
      // oclif's "Parsing --ram \n\tExpected an integer ..." as one line that names the flag.
      // (Our list flags take one value each, so oclif's note that they swallow arguments is wrong.)
      await usageExit(
        message
          .replace(/\n\s*See more help with --help$/m, "")
          .replace(/^Parsing (--[\w-]+)\s*\n\s*/, "$1: ")
          .replace(/\n+Note: --[\w-]+ allows multiple values[\s\S]*$/, "")
          .trim()
      )
    }
    if (cliState.json) await reportJson("internal", message)
    else process.stderr.write(`stoat: ${cliState.cmd}: ${message}\n`)
    return exitWhenWritten(oclif?.exit ?? 1)
  }
}
