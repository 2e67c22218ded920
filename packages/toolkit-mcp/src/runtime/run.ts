import { Errors, type Config } from "@oclif/core"
import { ToolkitCommand } from "./base.js"
import { errorMessage, ToolkitError } from "./errors.js"
import type { CommandIO } from "./io.js"
import type { CommandClass } from "./tree.js"

/**
 * Runs one command instance with the given IO and returns its exit code. Used by the CLI (with
 * the process streams) and by every tool call (with captured buffers), so both paths parse,
 * apply defaults and report errors identically. Failures print `Error: <message>` on stdout,
 * as the original toolkit does, and give exit code 1.
 */
export const runCommand = async (
  cls: CommandClass,
  id: string,
  argv: readonly string[],
  io: CommandIO,
  config: Config
): Promise<number> => {
  const command = new (cls as unknown as new (argv: string[], config: Config) => unknown)([...argv], config)
  if (!(command instanceof ToolkitCommand)) throw new Error(`command ${id} is not a toolkit command`)
  command.io = io
  command.commandId = id
  try {
    const result = await command.run()
    return typeof result === "number" ? result : 0
  } catch (error) {
    if (error instanceof Errors.ExitError) return error.oclif.exit ?? 0
    if (error instanceof ToolkitError) {
      io.out(`Error: ${error.message}\n`)
      return error.exitCode
    }
    io.out(`Error: ${errorMessage(error)}\n`)
    return 1
  }
}
