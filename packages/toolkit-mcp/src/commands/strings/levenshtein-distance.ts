import { formatLevenshtein, levenshteinDistance, LevenshteinLimitError } from "../../engine/strings.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { INPUT_LIMIT, isRegularFile, readRegularFile } from "../../runtime/files.js"
import { Opt } from "../../runtime/options.js"

/** Bounds the quadratic work: two 20,000-character strings take about a second. */
export const MAX_CHARACTER_PAIRS = 400_000_000

/**
 * As in the original: a value naming an existing file stands for that file's text. Only a
 * regular file counts; a directory, FIFO or device path is compared as the text it is.
 */
const textOf = async (value: string, option: string): Promise<string> =>
  (await isRegularFile(value)) ? ((await readRegularFile(value, `File of --${option}`)) ?? value) : value

export default class LevenshteinDistance extends ToolkitCommand {
  static override summary = "Edit distance between two strings"
  static override description =
    `Prints the Levenshtein (edit) distance between two strings. A value that names an existing regular file (at most ${INPUT_LIMIT}) is replaced by the file's text. The two lengths multiplied may be at most ${MAX_CHARACTER_PAIRS.toLocaleString("en-US")} (two 20,000-character strings).`
  static override flags = {
    string1: Opt.string({ description: "First string, or the path of a file holding it", required: true }),
    string2: Opt.string({ description: "Second string, or the path of a file holding it", required: true }),
    "ignore-case": Opt.boolean({ description: "Compare without regard to letter case" })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(LevenshteinDistance)
    let a = await textOf(flags.string1, "string1")
    let b = await textOf(flags.string2, "string2")
    if (flags["ignore-case"]) {
      a = a.toLowerCase()
      b = b.toLowerCase()
    }
    try {
      this.line(formatLevenshtein(levenshteinDistance(a, b, MAX_CHARACTER_PAIRS)))
    } catch (error) {
      if (error instanceof LevenshteinLimitError) this.fail(`the strings are too long to compare: ${error.message}`)
      throw error
    }
  }
}
