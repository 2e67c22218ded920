import { abjadify } from "../../engine/strings.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { INPUT_LIMIT, readInput, writeOutput } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class Abjadify extends ToolkitCommand {
  static override toolKind = "write" as const
  static override summary = "Remove the vowels of a text"
  static override description =
    "Removes the vowels a, e, i, o and u (either case) from the input file, except in the words 'a' and 'I', and writes the result to the output file."
  static override flags = {
    "in-file": Opt.string({
      description: `Path of the text, a regular file of at most ${INPUT_LIMIT}`,
      required: true
    }),
    "out-file": Opt.string({ description: "Path of the file to write", required: true })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Abjadify)
    const text = await readInput(this.io, flags["in-file"], "Input file")
    await writeOutput(flags["out-file"], abjadify(text), "output file")
    this.line(`Abjadified text written to ${flags["out-file"]}`)
  }
}
