import { compileOok, ookToBrainfuck } from "../../engine/ook.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { runInterpreter } from "../../runtime/interpreter.js"
import { INPUT_LIMIT } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class Ook extends ToolkitCommand {
  static override summary = "Run an Ook! program"
  static override description =
    "Translates an Ook! program to Brainfuck and runs it, with the same tape and input rules as interpreters brainfuck. Output is the program's output."
  static override flags = {
    file: Opt.string({
      description: `Path of the Ook! program (a regular file of at most ${INPUT_LIMIT}), or - to read it from stdin`,
      required: true
    })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Ook)
    await runInterpreter(this.io, flags.file, "Ook", compileOok, (source) => ookToBrainfuck(source).includes(","))
  }
}
