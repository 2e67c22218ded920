import { fleschReadingEase, formatFlesch } from "../../engine/strings.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { INPUT_LIMIT, readInput } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class FleschReadingEase extends ToolkitCommand {
  static override summary = "Flesch reading-ease score of a text"
  static override description =
    "Prints the Flesch reading-ease score of the input file (0-100, higher is easier), its band, and the sentence, word and syllable counts."
  static override flags = {
    "in-file": Opt.string({ description: `Path of the text, a regular file of at most ${INPUT_LIMIT}`, required: true })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(FleschReadingEase)
    const text = await readInput(this.io, flags["in-file"], "Input file")
    this.line(formatFlesch(fleschReadingEase(text)))
  }
}
