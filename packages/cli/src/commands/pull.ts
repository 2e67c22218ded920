import { Args } from "@oclif/core"
import { pullImage } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Pull extends StoatCommand {
  static override summary = "Download an image"
  static override description =
    "Download a catalog image and verify its checksum while streaming (tiny is built locally from Debian packages). Ctrl-C cancels and removes the partial file."
  static override args = { id: Args.string({ description: "image id (see stoat images)", required: true }) }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Pull)
    const result = await this.call(pullImage, { id: args.id }, { showProgress: !flags.quiet })
    this.emit(result, () => {
      this.line(`${result.id}: ${result.verified ? "ready" : "downloaded"}`)
      // Local builds (tiny, debian-12-mini) come out verified: nothing was downloaded whole.
      if (!result.verified) this.line("UNVERIFIED (no published checksum)")
    })
  }
}
