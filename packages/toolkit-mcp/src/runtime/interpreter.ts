import { BrainfuckSyntaxError, type Program } from "../engine/brainfuck.js"
import { runBrainfuck } from "../engine/run-in-worker.js"
import { ToolkitError } from "./errors.js"
import type { CommandIO } from "./io.js"
import { readInput } from "./files.js"

/**
 * Runs an esoteric program for a command: the program text comes from `--file` (or stdin for
 * `-`), `,` reads the command's stdin (empty in a tool call, so 0), output streams to io.out.
 * The run stops when io.signal aborts (tool-call timeout or cancellation).
 */
export const runInterpreter = async (io: CommandIO, file: string, language: string, compile: (source: string) => Program, readsInput: (source: string) => boolean): Promise<void> => {
  const source = await readInput(io, file, `${language} program file`)
  let program: Program
  try {
    program = compile(source)
  } catch (error) {
    if (error instanceof BrainfuckSyntaxError) throw new ToolkitError(`${language} program ${file === "-" ? "from stdin" : file}: ${error.message}`)
    throw error
  }
  // Read stdin only when the program can use it, so a program without ',' never waits on a terminal.
  // When the program itself came from stdin, stdin is used up and ',' sees end of input.
  const input = file !== "-" && readsInput(source) ? await io.stdin() : new Uint8Array(0)
  await runBrainfuck(program, { input, signal: io.signal, onOutput: (chunk) => io.out(chunk) })
}
