// Only light modules at the top: `stoat -v` and oclif's startup must not load effect.
import { STOAT_VERSION } from "@stoat/core/version"
import { commandName, helpTopic, preParse } from "./argv.js"
import { cliState } from "./state.js"
import { fastPathOf, type FastPath } from "./plain-forms.js"
import { exitWhenWritten } from "./exit.js"

const reportJson = async (code: "usage" | "internal", message: string): Promise<void> => {
  const { writeJsonError } = await import("./json-error.js")
  writeJsonError(cliState.cmd, code, message)
}

/** A usage error: its envelope with `--json`, else the message and where help is (`stoat <cmd> --help` by default). */
const usageExit = async (
  message: string,
  { prefix = cliState.cmd, help = `stoat ${cliState.cmd ? `${cliState.cmd} ` : ""}--help` } = {}
): Promise<never> => {
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
  return usageExit(`unknown command '${shown}'${suggestion ? `; did you mean 'stoat ${suggestion}'?` : ""}`, {
    prefix: "",
    help: "stoat help"
  })
}

/** Serves a fast path (see `fastPathOf`), loading only what that command needs. */
const runFastPath = async (fast: FastPath, json: boolean): Promise<void> => {
  switch (fast.kind) {
    case "ls":
      return (await import("./fast-paths.js")).fastLs(cliState.cmd, json)
    case "up":
      return (await import("./fast-paths.js")).fastUp(cliState.cmd, fast.vm, {
        wait: fast.wait,
        quiet: fast.quiet,
        json
      })
    case "mcp":
      return (await import("./mcp-serve.js")).serveMcp({})
  }
}

export const main = async (argv: string[]): Promise<void> => {
  // `-v/--version` only as the first word, plain text, whatever else is on the line.
  if (argv[0] === "-v" || argv[0] === "--version") {
    process.stdout.write(`stoat ${STOAT_VERSION}\n`)
    return
  }
  const { json, help, rest, guest } = preParse(argv)
  Object.assign(cliState, { json, guest, cmd: help ? "help" : commandName(rest) })
  const fast = fastPathOf(rest, help)
  if (fast !== undefined) return runFastPath(fast, json)
  // Loaded only now: `stoat -v`, plain `stoat ls` and plain `stoat mcp` never pay for oclif.
  // Its engine check loads semver (about 20 ms of every command's start-up) to test the Node version
  // the bin already runs on; the variable is dropped again so no child process inherits it.
  const skipEngineCheck = process.env["OCLIF_DISABLE_ENGINE_WARNING"] === undefined
  if (skipEngineCheck) process.env["OCLIF_DISABLE_ENGINE_WARNING"] = "1"
  const { flush, run } = await import("@oclif/core")
  if (skipEngineCheck) delete process.env["OCLIF_DISABLE_ENGINE_WARNING"]
  try {
    // `-h`, `--help` and no command at all are `stoat help [<cmd>]`, which answers in JSON too.
    await run(help ? ["help", ...helpTopic(rest)] : rest, import.meta.url)
    await flush()
  } catch (error) {
    const { oclifFailure } = await import("./oclif-errors.js")
    const failure = oclifFailure(error)
    switch (failure.kind) {
      case "exit":
        return exitWhenWritten(failure.code)
      case "unknown-command":
        return unknownCommand(rest)
      case "usage":
        return usageExit(failure.message)
      case "internal":
        if (cliState.json) await reportJson("internal", failure.message)
        else process.stderr.write(`stoat: ${cliState.cmd}: ${failure.message}\n`)
        return exitWhenWritten(failure.code)
    }
  }
}
