import { Effect } from "effect"
import { OAuthProfiles } from "../../../store/index.js"
import { withStore } from "../../../runtime/store.js"
import { ToolkitCommand } from "../../../runtime/base.js"
import { Opt } from "../../../runtime/options.js"

export default class ProfileDelete extends ToolkitCommand {
  static override toolKind = "delete" as const
  static override summary = "Delete an OAuth2 client profile"
  static override description =
    "Deletes a saved OAuth profile and its secret. Deleting a profile that does not exist is an error."
  static override flags = {
    name: Opt.string({ description: "Profile name (matched without regard to case)", required: true })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(ProfileDelete)
    await withStore(
      this.io.configDb,
      Effect.flatMap(OAuthProfiles, (profiles) => profiles.remove(flags.name))
    )
    this.line(`Deleted OAuth profile '${flags.name}'`)
  }
}
