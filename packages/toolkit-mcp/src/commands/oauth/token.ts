import { Effect } from "effect"
import { OAuthProfiles } from "../../store/index.js"
import { withStore } from "../../runtime/store.js"
import { ToolkitCommand } from "../../runtime/base.js"
import { Opt } from "../../runtime/options.js"
import { redactUrlCredentials } from "../../runtime/redact.js"

const REQUEST_TIMEOUT_MS = 30_000

// RFC 6749 §2.3.1: id and secret are form-urlencoded before they go into Basic credentials.
const formEncode = (value: string): string => encodeURIComponent(value).replace(/%20/g, "+")

export default class Token extends ToolkitCommand {
  static override toolKind = "network" as const
  static override summary = "Get an access token for a profile"
  static override description =
    "Requests an OAuth2 access token with the client-credentials grant from the profile's token endpoint (client authentication: HTTP Basic) and prints the token."
  static override flags = {
    profile: Opt.string({ description: "Name of the OAuth profile", required: true }),
    scope: Opt.string({ description: "Scopes to request instead of the profile's" })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(Token)
    const profile = await withStore(
      this.io.configDb,
      Effect.flatMap(OAuthProfiles, (store) => store.secret(flags.profile))
    )
    const body = new URLSearchParams({ grant_type: "client_credentials" })
    const scope = flags.scope ?? profile.scope
    if (scope !== undefined && scope !== "") body.set("scope", scope)
    const endpoint = redactUrlCredentials(profile.tokenUrl)
    const credentials = Buffer.from(`${formEncode(profile.clientId)}:${formEncode(profile.clientSecret)}`).toString(
      "base64"
    )
    let response: Response
    try {
      response = await fetch(profile.tokenUrl, {
        method: "POST",
        headers: {
          authorization: `Basic ${credentials}`,
          "content-type": "application/x-www-form-urlencoded",
          accept: "application/json"
        },
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
      })
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause
      this.fail(
        `token request to ${endpoint} failed: ${redactUrlCredentials(cause?.code ?? cause?.message ?? (error as Error).message)}`
      )
    }
    const text = await response.text()
    let json: Record<string, unknown> = {}
    try {
      json = JSON.parse(text) as Record<string, unknown>
    } catch {
      // not JSON; reported below
    }
    if (!response.ok) {
      const detail =
        typeof json["error"] === "string"
          ? `${json["error"]}${typeof json["error_description"] === "string" ? `: ${json["error_description"]}` : ""}`
          : response.statusText
      this.fail(`token request to ${endpoint} failed: HTTP ${response.status} ${detail}`)
    }
    const token = json["access_token"]
    if (typeof token !== "string" || token === "") this.fail(`token endpoint ${endpoint} returned no access_token`)
    this.line(token)
  }
}
