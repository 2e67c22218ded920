import { formatStringReport, stringReport } from "../../engine/strings.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { INPUT_LIMIT, readInput } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

export default class Report extends ToolkitCommand {
  static override summary = "Statistics of a text"
  static override description =
    "Prints character, word, sentence and paragraph counts, averages, estimated pages and reading time, the Flesch score, the longest and the most common word of a text given as a file or a string."
  static override flags = {
    "in-file": Opt.string({
      description: `Path of the text, a regular file of at most ${INPUT_LIMIT} (give this or --string)`,
      exclusive: ["string"]
    }),
    string: Opt.string({ description: "The text itself (give this or --in-file)", exclusive: ["in-file"] }),
    "words-per-minute": Opt.integer({
      description: "Reading speed used for the reading time",
      default: 238,
      min: 1,
      max: 10_000
    })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Report)
    if ((flags["in-file"] === undefined) === (flags.string === undefined))
      this.fail("give exactly one of --in-file and --string")
    const text = flags.string ?? (await readInput(this.io, flags["in-file"]!, "Input file"))
    const report = stringReport(text)
    const seconds = Math.ceil((report.words / flags["words-per-minute"]) * 60)
    this.line(formatStringReport({ ...report, estimatedReadingTimeSeconds: seconds }))
  }
}
