import { Effect } from "effect"
import { OAuthProfiles } from "../../../store/index.js"
import { withStore } from "../../../runtime/store.js"
import { ToolkitCommand } from "../../../runtime/base.js"
import { Opt } from "../../../runtime/options.js"

export default class ProfileUpdate extends ToolkitCommand {
  static override toolKind = "write" as const
  static override summary = "Change an OAuth2 client profile"
  static override description =
    "Changes the given fields of a saved OAuth profile; the others keep their values. The secret is never printed."
  static override flags = {
    name: Opt.string({ description: "Profile name (matched without regard to case)", required: true }),
    "token-url": Opt.string({ description: "New token endpoint" }),
    "client-id": Opt.string({ description: "New client id" }),
    "client-secret": Opt.immutable(Opt.string({ description: "New client secret" })),
    scope: Opt.string({ description: "New space-separated scopes" })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(ProfileUpdate)
    const patch = {
      ...(flags["token-url"] !== undefined ? { tokenUrl: flags["token-url"] } : {}),
      ...(flags["client-id"] !== undefined ? { clientId: flags["client-id"] } : {}),
      ...(flags["client-secret"] !== undefined ? { clientSecret: flags["client-secret"] } : {}),
      ...(flags.scope !== undefined ? { scope: flags.scope } : {})
    }
    if (Object.keys(patch).length === 0)
      this.fail("nothing to change: give --token-url, --client-id, --client-secret or --scope")
    await withStore(
      this.io.configDb,
      Effect.flatMap(OAuthProfiles, (profiles) => profiles.update(flags.name, patch))
    )
    this.line(`Updated OAuth profile '${flags.name}'`)
  }
}
