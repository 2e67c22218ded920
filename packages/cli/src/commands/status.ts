import { projectStatus } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { renderProjectStatus } from "../views/project.js"

export default class Status extends StoatCommand {
  static override summary = "Show this project's VMs"
  static override description =
    "Each VM ./stoat.toml declares: state (missing until stoat up creates it), health and drift from the declaration."

  async run(): Promise<void> {
    await this.parse(Status)
    const status = await this.call(projectStatus, {})
    this.emit(status, () => this.line(renderProjectStatus(status)))
  }
}
