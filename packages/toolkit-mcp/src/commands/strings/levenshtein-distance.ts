import { existsSync, readFileSync, statSync } from "node:fs"
import { formatLevenshtein, levenshteinDistance } from "../../engine/strings.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { Opt } from "../../runtime/options.js"

/** As in the original: a value naming an existing file stands for that file's text. */
const textOf = (value: string): string => (existsSync(value) && statSync(value).isFile() ? readFileSync(value, "utf8") : value)

export default class LevenshteinDistance extends ToolkitCommand {
  static override summary = "Edit distance between two strings"
  static override description =
    "Prints the Levenshtein (edit) distance between two strings. A value that names an existing file is replaced by the file's text."
  static override flags = {
    string1: Opt.string({ description: "First string, or the path of a file holding it", required: true }),
    string2: Opt.string({ description: "Second string, or the path of a file holding it", required: true }),
    "ignore-case": Opt.boolean({ description: "Compare without regard to letter case" })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(LevenshteinDistance)
    let a = textOf(flags.string1)
    let b = textOf(flags.string2)
    if (flags["ignore-case"]) {
      a = a.toLowerCase()
      b = b.toLowerCase()
    }
    this.line(formatLevenshtein(levenshteinDistance(a, b)))
  }
}
