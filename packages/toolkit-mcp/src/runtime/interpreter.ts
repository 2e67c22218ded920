import { BrainfuckSyntaxError, runProgram, type Program } from "../engine/brainfuck.js"
import { runBrainfuck } from "../engine/run-in-worker.js"
import { ToolkitError } from "./errors.js"
import type { CommandIO } from "./io.js"
import { readInput } from "./files.js"

/**
 * Runs an esoteric program for a command: the program text comes from `--file` (or stdin for
 * `-`), `,` reads the command's stdin (empty in a tool call, so 0), output goes to io.out.
 */
export const runInterpreter = async (
  io: CommandIO,
  file: string,
  language: string,
  compile: (source: string) => Program,
  readsInput: (source: string) => boolean
): Promise<void> => {
  const source = await readInput(io, file, `${language} program file`)
  let program: Program
  try {
    program = compile(source)
  } catch (error) {
    if (error instanceof BrainfuckSyntaxError)
      throw new ToolkitError(`${language} program ${file === "-" ? "from stdin" : file}: ${error.message}`)
    throw error
  }
  // Read stdin only when the program can use it, so a program without ',' never waits on a terminal.
  // When the program itself came from stdin, stdin is used up and ',' sees end of input.
  const input = file !== "-" && readsInput(source) ? await io.stdin() : new Uint8Array(0)
  const write = (chunk: Uint8Array): void => io.out(chunk)
  // A tool call already runs on a worker the server terminates to stop it: run right here,
  // without interruption checks. The command line streams output from a worker as it comes.
  if (io.mode === "tool") runProgram(program, { input, write })
  else await runBrainfuck(program, { input, onOutput: write })
}
