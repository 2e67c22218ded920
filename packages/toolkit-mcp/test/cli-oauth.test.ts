import { statSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { dirname } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { tempHome, toolkit, type Home, type Run } from "./helpers.js"

/** OAuth profiles in config.db and a real client-credentials request to a local token endpoint. */

const SECRET = "sup3r-s3cret-value"
const NEW_SECRET = "an0ther-s3cret"
const URL_SECRET = "s3cret-in-the-url"

interface Seen {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly body: URLSearchParams
}

let home: Home
let endpoint: Server
let url: string
const seen: Seen[] = []
const outputs: Run[] = []

const run = async (args: string[], input?: string): Promise<Run> => {
  const result = await toolkit(home, args, input === undefined ? {} : { input })
  outputs.push(result)
  return result
}

const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`

beforeAll(async () => {
  home = tempHome()
  endpoint = createServer((req, res) => {
    let body = ""
    req.on("data", (c: Buffer) => (body += c.toString()))
    req.on("end", () => {
      const params = new URLSearchParams(body)
      seen.push({ authorization: req.headers.authorization, contentType: req.headers["content-type"], body: params })
      const valid = [basic("cid", SECRET), basic("cid", NEW_SECRET), basic("stdin-client", "from-stdin-secret")]
      res.setHeader("content-type", "application/json")
      if (req.method !== "POST" || req.url !== "/token" || params.get("grant_type") !== "client_credentials") {
        res.statusCode = 400
        res.end(JSON.stringify({ error: "unsupported_grant_type" }))
      } else if (!valid.includes(req.headers.authorization ?? "")) {
        res.statusCode = 401
        res.end(JSON.stringify({ error: "invalid_client", error_description: "bad credentials" }))
      } else res.end(JSON.stringify({ access_token: `tok-${seen.length}`, token_type: "Bearer", expires_in: 3600 }))
    })
  })
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", () => resolve()))
  const address = endpoint.address()
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/token`
})

afterAll(async () => {
  await new Promise<void>((resolve) => endpoint.close(() => resolve()))
  home.cleanup()
})

describe("oauth", () => {
  it("adds a profile; the store is private and list never shows the secret", async () => {
    const added = await run([
      "oauth",
      "profile",
      "add",
      "--name",
      "Acme",
      "--token-url",
      url,
      "--client-id",
      "cid",
      "--client-secret",
      SECRET,
      "--scope",
      "api.read"
    ])
    expect(added).toMatchObject({ code: 0, stdout: "Added OAuth profile 'Acme'\n" })
    expect(statSync(home.db).mode & 0o777).toBe(0o600)
    expect(statSync(dirname(home.db)).mode & 0o777).toBe(0o700)
    const list = await run(["oauth", "profile", "list"])
    expect(list.stdout).toBe(`Acme\n  token url: ${url}\n  client id: cid\n  scope: api.read\n  client secret: (set)\n`)
    expect(
      (
        await run([
          "oauth",
          "profile",
          "add",
          "--name",
          "acme",
          "--token-url",
          url,
          "--client-id",
          "x",
          "--client-secret",
          "y"
        ])
      ).stdout
    ).toBe("Error: OAuth profile 'acme' already exists\n")
  })

  it("gets a token with the client-credentials grant and HTTP Basic client authentication", async () => {
    const token = await run(["oauth", "token", "--profile", "acme"]) // names match without regard to case
    expect(token).toMatchObject({ code: 0, stdout: `tok-${seen.length}\n`, stderr: "" })
    const request = seen.at(-1)!
    expect(request.authorization).toBe(basic("cid", SECRET))
    expect(request.contentType).toBe("application/x-www-form-urlencoded")
    expect(Object.fromEntries(request.body)).toEqual({ grant_type: "client_credentials", scope: "api.read" })
  })

  it("reports the endpoint's error without the secret", async () => {
    await run(["oauth", "profile", "update", "--name", "acme", "--client-id", "wrong"])
    const failed = await run(["oauth", "token", "--profile", "acme"])
    expect(failed).toMatchObject({
      code: 1,
      stdout: `Error: token request to ${url} failed: HTTP 401 invalid_client: bad credentials\n`
    })
    await run(["oauth", "profile", "update", "--name", "acme", "--client-id", "cid", "--client-secret", NEW_SECRET])
    expect((await run(["oauth", "token", "--profile", "acme"])).code).toBe(0)
    expect(seen.at(-1)!.authorization).toBe(basic("cid", NEW_SECRET))
  })

  it("reads the secret from stdin when --client-secret is absent", async () => {
    const added = await run(
      ["oauth", "profile", "add", "--name", "piped", "--token-url", url, "--client-id", "stdin-client"],
      "from-stdin-secret\n"
    )
    expect(added.code).toBe(0)
    expect((await run(["oauth", "token", "--profile", "piped"])).code).toBe(0)
    expect(seen.at(-1)!.authorization).toBe(basic("stdin-client", "from-stdin-secret"))
  })

  it("fails for unreachable endpoints and unknown profiles", async () => {
    await run([
      "oauth",
      "profile",
      "add",
      "--name",
      "down",
      "--token-url",
      "http://127.0.0.1:9/token",
      "--client-id",
      "c",
      "--client-secret",
      SECRET
    ])
    const down = await run(["oauth", "token", "--profile", "down"])
    expect(down.code).toBe(1)
    expect(down.stdout).toMatch(/^Error: token request to http:\/\/127\.0\.0\.1:9\/token failed: /)
    expect(await run(["oauth", "token", "--profile", "nope"])).toMatchObject({
      code: 1,
      stdout: "Error: OAuth profile 'nope' does not exist\n"
    })
    expect(
      (
        await run([
          "oauth",
          "profile",
          "add",
          "--name",
          "bad",
          "--token-url",
          "ftp://x",
          "--client-id",
          "c",
          "--client-secret",
          "s"
        ])
      ).code
    ).toBe(1)
  })

  it("never shows credentials put in a token URL, in the list or in a failure", async () => {
    await run([
      "oauth",
      "profile",
      "add",
      "--name",
      "userinfo",
      "--token-url",
      `http://me:${URL_SECRET}@127.0.0.1:9/token`,
      "--client-id",
      "c",
      "--client-secret",
      SECRET
    ])
    expect((await run(["oauth", "profile", "list"])).stdout).toContain(
      "userinfo\n  token url: http://***@127.0.0.1:9/token\n"
    )
    const failed = await run(["oauth", "token", "--profile", "userinfo"])
    expect(failed.code).toBe(1)
    expect(failed.stdout).toMatch(/^Error: token request to http:\/\/\*\*\*@127\.0\.0\.1:9\/token failed: /)
    await run(["oauth", "profile", "delete", "--name", "userinfo"])
  })

  it("deletes profiles", async () => {
    expect(await run(["oauth", "profile", "delete", "--name", "DOWN"])).toMatchObject({
      code: 0,
      stdout: "Deleted OAuth profile 'DOWN'\n"
    })
    expect((await run(["oauth", "profile", "delete", "--name", "down"])).code).toBe(1)
  })

  it("never printed a secret", () => {
    expect(outputs.length).toBeGreaterThan(10)
    for (const output of outputs) {
      for (const secret of [SECRET, NEW_SECRET, "from-stdin-secret", URL_SECRET]) {
        expect(output.stdout).not.toContain(secret)
        expect(output.stderr).not.toContain(secret)
      }
    }
  })
})
