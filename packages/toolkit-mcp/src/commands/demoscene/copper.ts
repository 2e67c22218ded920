import { play } from "../../demoscene/play.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { Opt } from "../../runtime/options.js"

export default class Copper extends ToolkitCommand {
  static override summary = "Amiga-style copper bars"
  static override description =
    "Amiga-style copper bars, drawn with half blocks in 24-bit colour at the terminal's size, about 20 frames a second. Needs a terminal."
  static override flags = {
    frames: Opt.integer({ description: "Number of frames to play", default: 200, min: 1, max: 1_000_000 })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Copper)
    await play(this.io, "copper", flags.frames)
  }
}
