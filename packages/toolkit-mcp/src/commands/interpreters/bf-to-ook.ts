import { bfToOok } from "../../engine/ook.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { INPUT_LIMIT, readInput, writeOutput } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class BfToOok extends ToolkitCommand {
  static override toolKind = "write" as const
  static override summary = "Translate Brainfuck to Ook!"
  static override description =
    "Translates a Brainfuck program to Ook! (space-separated token pairs, comments dropped) and writes it to the output file, creating its directory if needed."
  static override flags = {
    source: Opt.string({
      description: `Path of the Brainfuck program, a regular file of at most ${INPUT_LIMIT}`,
      required: true
    }),
    output: Opt.string({ description: "Path of the Ook! file to write", required: true })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(BfToOok)
    const source = await readInput(this.io, flags.source, "Brainfuck source file")
    await writeOutput(flags.output, bfToOok(source), "Ook! file")
    this.line(`Ook! program written to ${flags.output}`)
  }
}
