import { Effect } from "effect"
import { OAuthProfiles } from "../../../store/index.js"
import { withStore } from "../../../runtime/store.js"
import { ToolkitCommand } from "../../../runtime/base.js"
import { redactUrlCredentials } from "../../../runtime/redact.js"

export default class ProfileList extends ToolkitCommand {
  static override summary = "List OAuth2 client profiles"
  static override description =
    "Lists the saved OAuth profiles with their token endpoint, client id and scope. Secrets are shown only as (set), credentials in a token URL as ***."
  static override flags = {}

  async run(): Promise<void> {
    await this.options(ProfileList)
    const profiles = await withStore(
      this.io.configDb,
      Effect.flatMap(OAuthProfiles, (store) => store.list)
    )
    if (profiles.length === 0) {
      this.line("No OAuth profiles")
      return
    }
    this.line(
      profiles
        .map((p) =>
          [
            p.name,
            `  token url: ${redactUrlCredentials(p.tokenUrl)}`,
            `  client id: ${p.clientId}`,
            `  scope: ${p.scope ?? "(none)"}`,
            `  client secret: ${p.hasSecret ? "(set)" : "(not set)"}`
          ].join("\n")
        )
        .join("\n\n")
    )
  }
}
