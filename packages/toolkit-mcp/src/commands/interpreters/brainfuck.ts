import { compileBrainfuck } from "../../engine/brainfuck.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { runInterpreter } from "../../runtime/interpreter.js"
import { INPUT_LIMIT } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class Brainfuck extends ToolkitCommand {
  static override summary = "Run a Brainfuck program"
  static override description =
    "Runs a Brainfuck program on a 30,000-cell tape of 8-bit cells (both wrap). ',' reads stdin (0 at end of input; a tool call has no input). Output is the program's output."
  static override examples = [
    "<%= config.bin %> interpreters brainfuck --file hello.bf",
    "cat hello.bf | <%= config.bin %> interpreters brainfuck --file -"
  ]
  static override flags = {
    file: Opt.string({
      description: `Path of the Brainfuck program (a regular file of at most ${INPUT_LIMIT}), or - to read it from stdin`,
      required: true
    })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Brainfuck)
    await runInterpreter(this.io, flags.file, "Brainfuck", compileBrainfuck, (source) => source.includes(","))
  }
}
