import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { ToolkitError } from "./errors.js"
import type { CommandIO } from "./io.js"

/** Reads a text file, or stdin for `-` (empty inside a tool call). `what` names it in errors. */
export const readInput = async (io: CommandIO, path: string, what: string): Promise<string> => {
  if (path === "-") return Buffer.from(await io.stdin()).toString("utf8")
  if (!existsSync(path)) throw new ToolkitError(`${what} not found: ${path}`)
  if (statSync(path).isDirectory()) throw new ToolkitError(`${what} is a directory: ${path}`)
  try {
    return readFileSync(path, "utf8")
  } catch (error) {
    throw new ToolkitError(`cannot read ${what.toLowerCase()} ${path}: ${(error as Error).message}`)
  }
}

/** Writes a text file, creating missing parent directories. */
export const writeOutput = (path: string, text: string, what: string): void => {
  try {
    mkdirSync(dirname(resolve(path)), { recursive: true })
    writeFileSync(path, text)
  } catch (error) {
    throw new ToolkitError(`cannot write ${what} ${path}: ${(error as Error).message}`)
  }
}
