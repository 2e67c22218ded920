import { version } from "@stoat/core"
import { StoatCommand } from "../base.js"

export default class Version extends StoatCommand {
  static override summary = "Print the version"
  static override description = "Print Stoat's version; with --json, also the JSON contract version."

  async run(): Promise<void> {
    await this.parse(Version)
    const info = await this.call(version, {})
    this.emit(info, () => this.line(`stoat ${info.version}`))
  }
}
