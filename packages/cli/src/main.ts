// Only light modules at the top: `stoat -v` and oclif's startup must not load effect.
import { STOAT_VERSION } from "@stoat/core/version"
import { commandName, extractJsonFlag } from "./argv.js"
import { cliState } from "./state.js"

const reportJson = async (code: "usage" | "internal", message: string): Promise<void> => {
  const { encodeLine, resultError } = await import("@stoat/wire")
  process.stdout.write(encodeLine(resultError(cliState.cmd, { code, message })))
}

const usageExit = async (message: string): Promise<never> => {
  if (cliState.json) await reportJson("usage", message)
  else process.stderr.write(`stoat: ${cliState.cmd ? `${cliState.cmd}: ` : ""}${message}\nSee 'stoat ${cliState.cmd ? `${cliState.cmd} ` : ""}--help'.\n`)
  process.exit(2)
}

export const main = async (argv: string[]): Promise<void> => {
  // `-v/--version` only as the first word, plain text, whatever else is on the line.
  if (argv[0] === "-v" || argv[0] === "--version") {
    process.stdout.write(`stoat ${STOAT_VERSION}\n`)
    return
  }
  const { json, rest } = extractJsonFlag(argv)
  cliState.json = json
  cliState.cmd = commandName(rest)
  if (rest.length === 1 && (rest[0] === "ls" || rest[0] === "list")) {
    const { fastLs } = await import("./fast-ls.js")
    return fastLs(json)
  }
  // Loaded only now: `stoat -v` and plain `stoat ls` never pay for oclif.
  const { Errors, flush, run } = await import("@oclif/core")
  try {
    await run(rest.length === 0 ? ["--help"] : rest, import.meta.url)
    await flush()
  } catch (error) {
    if (error instanceof Errors.ExitError) process.exit(error.oclif.exit)
    const oclif = (error as { oclif?: { exit?: number } }).oclif
    const message = (error as Error).message ?? String(error)
    if (oclif?.exit === 2 || /^(Nonexistent flag|Unexpected argument|Missing (\d+ )?required|Expected|Command .* not found|Parsing --)/m.test(message)) {
      await usageExit(message.replace(/\n\s*See more help with --help$/m, "").trim())
    }
    if (cliState.json) await reportJson("internal", message)
    else process.stderr.write(`stoat: ${cliState.cmd}: ${message}\n`)
    process.exit(oclif?.exit ?? 1)
  }
}
