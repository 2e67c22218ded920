import { reverseText, type ReverseUnit } from "../../engine/strings.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { INPUT_LIMIT, readInput, writeOutput } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class Reverse extends ToolkitCommand {
  static override toolKind = "write" as const
  static override summary = "Reverse the text of a file"
  static override description = "Reverses the text of the input file and writes it to the output file."
  static override flags = {
    "in-file": Opt.string({
      description: `Path of the text to reverse, a regular file of at most ${INPUT_LIMIT}`,
      required: true
    }),
    "out-file": Opt.string({ description: "Path of the file to write", required: true }),
    unit: Opt.oneOf(["grapheme", "code-point", "code-unit"] as const, {
      description:
        "What to reverse: user-perceived characters, Unicode code points, or UTF-16 code units (the original's behaviour)",
      default: "grapheme"
    })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Reverse)
    const text = await readInput(this.io, flags["in-file"], "Input file")
    await writeOutput(flags["out-file"], reverseText(text, flags.unit as ReverseUnit), "output file")
    this.line(`Reversed text written to ${flags["out-file"]}`)
  }
}
