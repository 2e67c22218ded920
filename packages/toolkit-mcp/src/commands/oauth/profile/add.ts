import { Effect } from "effect"
import { OAuthProfiles } from "../../../store/index.js"
import { withStore } from "../../../runtime/store.js"
import { ToolkitCommand } from "../../../runtime/base.js"
import { Opt } from "../../../runtime/options.js"
import { readSecret } from "../../../runtime/secret.js"

export default class ProfileAdd extends ToolkitCommand {
  static override toolKind = "write" as const
  static override summary = "Add an OAuth2 client profile"
  static override description =
    "Saves a client-credentials profile (token endpoint, client id, secret, scope) in config.db, a file only you can read. Without --client-secret the secret is prompted for, or read from the first line of stdin. The secret is never printed."
  static override flags = {
    name: Opt.string({ description: "Profile name (matched without regard to case)", required: true }),
    "token-url": Opt.string({ description: "The authorization server's token endpoint", required: true }),
    "client-id": Opt.string({ description: "Client id", required: true }),
    "client-secret": Opt.immutable(
      Opt.string({ description: "Client secret; prompted for (or read from stdin) when absent" })
    ),
    scope: Opt.string({ description: "Space-separated scopes to request" })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(ProfileAdd)
    const secret = flags["client-secret"] ?? (await readSecret(this.io, "Client secret: "))
    if (secret === "") this.fail("a client secret is required: pass --client-secret or type it when asked")
    await withStore(
      this.io.configDb,
      Effect.flatMap(OAuthProfiles, (profiles) =>
        profiles.add({
          name: flags.name,
          tokenUrl: flags["token-url"],
          clientId: flags["client-id"],
          clientSecret: secret,
          ...(flags.scope !== undefined ? { scope: flags.scope } : {})
        })
      )
    )
    this.line(`Added OAuth profile '${flags.name}'`)
  }
}
