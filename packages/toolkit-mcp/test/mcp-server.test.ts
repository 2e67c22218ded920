import { readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import {
  bfPrinting,
  busiestThread,
  connect,
  HELLO_BF,
  rawHttp,
  serve,
  spinningThread,
  tempHome,
  textOf,
  threadAlive,
  toolkit,
  waitForQuiet,
  waitUntil,
  type Home,
  type Serving
} from "./helpers.js"

/**
 * A real `toolkit mcp serve` process and a real MCP SDK client over Streamable HTTP.
 * One server serves every exposable command (profile `everything`), with a 2 s hidden
 * per-call timeout so the timeout rule can be tested without waiting 300 s.
 */

const ALL_EXPOSABLE = [
  "interpreters_brainfuck",
  "interpreters_ook",
  "interpreters_bf-to-ook",
  "strings_reverse",
  "strings_levenshtein-distance",
  "strings_abjadify",
  "strings_flesch-reading-ease",
  "strings_report",
  "oauth_profile_delete",
  "oauth_profile_list"
]

let home: Home
let server: Serving
let client: Client

const call = async (name: string, args: Record<string, unknown>) => {
  const result = await client.callTool({ name, arguments: args })
  return { text: textOf(result), isError: result.isError === true }
}

/** A raw tools/list POST (or another method, without a body) with chosen headers; resolves with the status code. */
const rawPost = async (url: string, headers: Record<string, string>, method = "POST"): Promise<number> =>
  (
    await rawHttp(url, {
      method,
      headers,
      ...(method === "POST" ? { body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }) } : {})
    })
  ).status

beforeAll(async () => {
  home = tempHome()
  home.file("hello.bf", HELLO_BF)
  home.file("loop.bf", "++++++++[>++++++++<-]>+.[-]+[]") // prints "A", then never ends
  home.file("hello.ook", "")
  const saved = await toolkit(home, [
    "mcp",
    "save",
    "everything",
    "--include",
    "interpreters",
    "--include",
    "strings",
    "--include",
    "oauth"
  ])
  expect(saved.stdout).toBe(`Saved MCP profile 'everything' (${ALL_EXPOSABLE.length} tools)\n`)
  server = await serve(home, ["--profile", "everything", "--port", "0", "--tool-timeout-ms", "2000"])
  client = await connect(server.url)
})

afterAll(async () => {
  await client?.close()
  await server?.stop()
  home?.cleanup()
})

describe("tools/list", () => {
  it("names tools by action path joined with _, in tree order, with the command descriptions", async () => {
    expect(server.lines[1]).toBe(`Tools: ${ALL_EXPOSABLE.join(", ")}`)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(ALL_EXPOSABLE)
    const manifest = JSON.parse(readFileSync(join(__dirname, "../oclif.manifest.json"), "utf8")) as {
      commands: Record<
        string,
        {
          description?: string
          flags: Record<string, { type: string; required?: boolean; hidden?: boolean; description?: string }>
        }
      >
    }
    for (const tool of tools) {
      const command = manifest.commands[tool.name.replaceAll("_", ":")]!
      expect(tool.description).toBe(command.description)
      // Input schema: one property per visible option, named without dashes; required as on the CLI.
      const visible = Object.entries(command.flags).filter(([name, f]) => !f.hidden && name !== "help")
      expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual(visible.map(([name]) => name).sort())
      expect([...(tool.inputSchema.required ?? [])].sort()).toEqual(
        visible
          .filter(([, f]) => f.required)
          .map(([name]) => name)
          .sort()
      )
      expect((tool.inputSchema as { additionalProperties?: unknown }).additionalProperties).toBe(false)
      for (const [name, f] of visible)
        expect((tool.inputSchema.properties![name] as { description?: string }).description).toBe(f.description)
    }
  })

  it("maps option types to JSON types", async () => {
    const { tools } = await client.listTools()
    const schema = (name: string) => tools.find((t) => t.name === name)!.inputSchema
    expect(schema("interpreters_brainfuck")).toMatchObject({
      type: "object",
      properties: { file: { type: "string" } },
      required: ["file"]
    })
    expect(schema("strings_report").properties!["words-per-minute"]).toMatchObject({
      type: "integer",
      default: 238,
      minimum: 1
    })
    expect(schema("strings_levenshtein-distance").properties!["ignore-case"]).toMatchObject({ type: "boolean" })
    expect(schema("strings_reverse").properties!["unit"]).toMatchObject({
      type: "string",
      enum: ["grapheme", "code-point", "code-unit"]
    })
  })

  it("annotates pure commands read-only, deletes destructive, writers neither", async () => {
    const { tools } = await client.listTools()
    const a = (name: string) => tools.find((t) => t.name === name)!.annotations
    expect(a("interpreters_brainfuck")).toEqual({
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false
    })
    expect(a("strings_report")).toMatchObject({ readOnlyHint: true, openWorldHint: false })
    expect(a("interpreters_bf-to-ook")).toMatchObject({ readOnlyHint: false, destructiveHint: false })
    expect(a("oauth_profile_delete")).toMatchObject({ readOnlyHint: false, destructiveHint: true })
    expect(a("oauth_profile_list")).toMatchObject({ readOnlyHint: true })
  })
})

describe("tools/call: each exposed tool", () => {
  it("interpreters_brainfuck runs a program", async () => {
    expect(await call("interpreters_brainfuck", { file: "hello.bf" })).toEqual({
      text: "Hello World!\n",
      isError: false
    })
  })

  it("interpreters_bf-to-ook writes Ook! and interpreters_ook runs it", async () => {
    const written = await call("interpreters_bf-to-ook", { source: "hello.bf", output: "out/dir/hello.ook" })
    expect(written).toEqual({ text: "Ook! program written to out/dir/hello.ook\n", isError: false })
    expect(readFileSync(join(home.dir, "out/dir/hello.ook"), "utf8")).toMatch(/^Ook\. Ook\. /)
    expect(await call("interpreters_ook", { file: "out/dir/hello.ook" })).toEqual({
      text: "Hello World!\n",
      isError: false
    })
  })

  it("the strings tools", async () => {
    home.file("text.txt", "Hello world. The cat sat on the mat.")
    expect(await call("strings_reverse", { "in-file": "text.txt", "out-file": "rev.txt" })).toEqual({
      text: "Reversed text written to rev.txt\n",
      isError: false
    })
    expect(readFileSync(join(home.dir, "rev.txt"), "utf8")).toBe(".tam eht no tas tac ehT .dlrow olleH")
    expect(await call("strings_levenshtein-distance", { string1: "kitten", string2: "sitting" })).toEqual({
      text: "Levenshtein distance: 3\n",
      isError: false
    })
    expect((await call("strings_abjadify", { "in-file": "text.txt", "out-file": "abj.txt" })).isError).toBe(false)
    expect(readFileSync(join(home.dir, "abj.txt"), "utf8")).toBe("Hll wrld. Th ct st n th mt.")
    const flesch = await call("strings_flesch-reading-ease", { "in-file": "text.txt" })
    expect(flesch.text).toMatch(
      /^Flesch Reading Ease: +\d+\.\d\d\nReadability: +.+\nSentences: +2\nWords: +8\nSyllables: +\d+\n$/
    )
    const report = await call("strings_report", { string: "One two three. Four five!" })
    expect(report.text).toMatch(/^Text Analysis Report\n/)
    expect(report.text).toMatch(/^Words: +5$/m)
  })

  it("the oauth profile tools", async () => {
    expect(await call("oauth_profile_list", {})).toEqual({ text: "No OAuth profiles\n", isError: false })
    await toolkit(home, [
      "oauth",
      "profile",
      "add",
      "--name",
      "acme",
      "--token-url",
      "http://127.0.0.1:9/token",
      "--client-id",
      "cid",
      "--client-secret",
      "s3cr3t-value"
    ])
    const listed = await call("oauth_profile_list", {})
    expect(listed.text).toContain("acme\n  token url: http://127.0.0.1:9/token\n  client id: cid")
    expect(listed.text).not.toContain("s3cr3t-value")
    expect(await call("oauth_profile_delete", { name: "acme" })).toEqual({
      text: "Deleted OAuth profile 'acme'\n",
      isError: false
    })
    expect(await call("oauth_profile_delete", { name: "acme" })).toEqual({
      text: "Error: OAuth profile 'acme' does not exist\nexit code: 1",
      isError: true
    })
  })
})

describe("tools/call: results and argument rules", () => {
  it("a failing command returns its Error line and an exit code line, with isError", async () => {
    expect(await call("interpreters_brainfuck", { file: "/nonexistent/x.bf" })).toEqual({
      text: "Error: Brainfuck program file not found: /nonexistent/x.bf\nexit code: 1",
      isError: true
    })
  })

  it("an unknown property is an argument error ending with exit code: 1", async () => {
    expect(await call("interpreters_brainfuck", { file: "hello.bf", nope: 1 })).toEqual({
      text: "Unknown argument 'nope' for tool interpreters_brainfuck.\nexit code: 1",
      isError: true
    })
  })

  it("a value of an unsupported type is an argument error too", async () => {
    expect(await call("strings_report", { string: "a b", "words-per-minute": "fast" })).toEqual({
      text: "Argument 'words-per-minute' for tool strings_report must be an integer.\nexit code: 1",
      isError: true
    })
    expect(await call("interpreters_brainfuck", { file: 42 })).toEqual({
      text: "Argument 'file' for tool interpreters_brainfuck must be a string.\nexit code: 1",
      isError: true
    })
    expect(
      (await call("strings_levenshtein-distance", { string1: "a", string2: "b", "ignore-case": "yes" })).text
    ).toBe("Argument 'ignore-case' for tool strings_levenshtein-distance must be a boolean.\nexit code: 1")
  })

  it("a missing required option fails like the command line does", async () => {
    const result = await call("interpreters_brainfuck", {})
    expect(result.isError).toBe(true)
    expect(result.text).toBe("Error: Missing required flag file\nexit code: 1")
  })

  it("an unknown tool's whole text is Unknown tool '<name>'.", async () => {
    expect(await call("strings_nope", {})).toEqual({ text: "Unknown tool 'strings_nope'.", isError: true })
    // A command that exists but is not in the profile is unknown too.
    expect(await call("web_serve-html", { file: "x.html" })).toEqual({
      text: "Unknown tool 'web_serve-html'.",
      isError: true
    })
  })

  it("no output at all gives (no output)", async () => {
    home.file("silent.bf", "+++[-]")
    expect(await call("interpreters_brainfuck", { file: "silent.bf" })).toEqual({ text: "(no output)", isError: false })
  })

  it("stdin is empty in a tool call: --file - reads nothing and ',' reads 0", async () => {
    expect(await call("interpreters_brainfuck", { file: "-" })).toEqual({ text: "(no output)", isError: false })
    home.file("read.bf", ",+++++++++++++++++++++++++++++++++++++++++++++++++.") // 0 + 49 = "1"
    expect(await call("interpreters_brainfuck", { file: "read.bf" })).toEqual({ text: "1", isError: false })
  })

  it("values starting with @ are literal (no response-file expansion)", async () => {
    home.file("notes.txt", "--string this would be three words if expanded")
    expect(await call("strings_levenshtein-distance", { string1: "@notes.txt", string2: "@notes.txx" })).toEqual({
      text: "Levenshtein distance: 1\n",
      isError: false
    })
    const report = await call("strings_report", { string: "@notes.txt" })
    expect(report.text).toMatch(/^Characters \(with spaces\): +10$/m)
  })

  it("booleans are passed as --flag true|false", async () => {
    expect(
      (await call("strings_levenshtein-distance", { string1: "ABC", string2: "abc", "ignore-case": true })).text
    ).toBe("Levenshtein distance: 0\n")
    expect(
      (await call("strings_levenshtein-distance", { string1: "ABC", string2: "abc", "ignore-case": false })).text
    ).toBe("Levenshtein distance: 3\n")
  })

  it("stderr gets its own section after stdout", async () => {
    // A stored default for an option no strings command has: the command warns on stderr and runs.
    const Database = (await import("better-sqlite3")).default
    await toolkit(home, ["config", "strings", "report", "--words-per-minute", "238"])
    const db = new Database(home.db)
    db.prepare(`INSERT INTO "strings" (action, option, value) VALUES ('levenshtein-distance', 'nope', '["1"]')`).run()
    db.close()
    try {
      expect(await call("strings_levenshtein-distance", { string1: "a", string2: "b" })).toEqual({
        text: "Levenshtein distance: 1\nstderr:\nWarning: ignoring unknown config entry strings levenshtein-distance --nope\n",
        isError: false
      })
    } finally {
      await toolkit(home, ["config", "strings", "levenshtein-distance", "--unset", "nope"])
      await toolkit(home, ["config", "strings", "report", "--unset", "words-per-minute"])
    }
  })

  it("config defaults apply to tool calls, and arguments override them", async () => {
    const text = Array.from({ length: 120 }, () => "word").join(" ") + "."
    expect((await call("strings_report", { string: text })).text).toMatch(/^Est\. reading time: +31s$/m) // 238 wpm built in
    expect((await toolkit(home, ["config", "strings", "--words-per-minute", "60"])).code).toBe(0)
    expect((await call("strings_report", { string: text })).text).toMatch(/^Est\. reading time: +2m$/m) // topic level
    expect((await toolkit(home, ["config", "strings", "report", "--words-per-minute", "120"])).code).toBe(0)
    expect((await call("strings_report", { string: text })).text).toMatch(/^Est\. reading time: +1m$/m) // action level wins
    expect((await call("strings_report", { string: text, "words-per-minute": 240 })).text).toMatch(
      /^Est\. reading time: +30s$/m
    ) // argument wins
    await toolkit(home, ["config", "strings", "--unset", "words-per-minute"])
    await toolkit(home, ["config", "strings", "report", "--unset", "words-per-minute"])
    expect((await call("strings_report", { string: text })).text).toMatch(/^Est\. reading time: +31s$/m)
  })
})

describe("tools/call: logging, concurrency, timeout, cancellation", () => {
  it("every call writes one 'tool <name> exit <code> <ms>ms' line to stderr, unknown tools included", async () => {
    const from = server.stderr().length
    await call("interpreters_brainfuck", { file: "hello.bf" })
    await call("interpreters_brainfuck", { file: "/nonexistent/x.bf" })
    await call("no_such_tool", {})
    await call("interpreters_brainfuck", { nope: true })
    // Only this test's lines: an earlier line can look like the last one awaited here.
    await server.waitForStderr(/(tool \S+ exit \d+ \d+ms\n[^]*){4}/, undefined, from)
    const lines = server
      .stderr()
      .slice(from)
      .split("\n")
      .filter((l) => l.startsWith("tool "))
    expect(lines).toHaveLength(4)
    expect(lines[0]).toMatch(/^tool interpreters_brainfuck exit 0 \d+ms$/)
    expect(lines[1]).toMatch(/^tool interpreters_brainfuck exit 1 \d+ms$/)
    expect(lines[2]).toMatch(/^tool no_such_tool exit 127 \d+ms$/)
    expect(lines[3]).toMatch(/^tool interpreters_brainfuck exit 1 \d+ms$/)
  })

  it("20 concurrent calls each get their own output", async () => {
    const calls = Array.from({ length: 20 }, (_, i) => {
      const expected = `call ${String(i).padStart(2, "0")} of twenty\n`
      // A busy prefix keeps each run going past the inline budget, so runs overlap in workers.
      home.file(`c${i}.bf`, `++++++++[>++++++++[>++++++++[>++++++++[-]<-]<-]<-]${bfPrinting(expected)}`)
      return { i, expected }
    })
    const results = await Promise.all(
      calls.map(({ i }) =>
        i % 4 === 3
          ? call("strings_levenshtein-distance", { string1: "x".repeat(i), string2: "" })
          : call("interpreters_brainfuck", { file: `c${i}.bf` })
      )
    )
    results.forEach((result, i) => {
      expect(result.isError).toBe(false)
      expect(result.text).toBe(i % 4 === 3 ? `Levenshtein distance: ${i}\n` : calls[i]!.expected)
    })
  })

  it("a call past the timeout returns 'Tool <name> timed out after N s' and its interpreter is stopped", async () => {
    await waitForQuiet(server.proc.pid!)
    const pending = call("interpreters_brainfuck", { file: "loop.bf" })
    const busy = await busiestThread(server.proc.pid!)
    expect(busy.tid).not.toBe(server.proc.pid) // the program runs in a worker thread, not on the event loop
    expect(await pending).toEqual({ text: "Tool interpreters_brainfuck timed out after 2 s", isError: true })
    await server.waitForStderr(/tool interpreters_brainfuck exit 124 \d+ms/)
    expect(await waitUntil(() => !threadAlive(server.proc.pid!, busy.tid))).toBe(true)
    // The server is still responsive.
    expect((await call("interpreters_brainfuck", { file: "hello.bf" })).text).toBe("Hello World!\n")
  })

  it("a call the client cancels stops its interpreter and is logged", async () => {
    // A server of its own whose timeout a loaded machine cannot reach first: only the cancel ends the call.
    const patient = await serve(home, ["--profile", "everything", "--port", "0", "--tool-timeout-ms", "300000"])
    const patientClient = await connect(patient.url)
    try {
      await waitForQuiet(patient.proc.pid!)
      const controller = new AbortController()
      const pending = patientClient.callTool(
        { name: "interpreters_brainfuck", arguments: { file: "loop.bf" } },
        undefined,
        { signal: controller.signal }
      )
      pending.catch(() => undefined)
      const busy = { tid: await spinningThread(patient.proc.pid!) }
      expect(busy.tid).not.toBe(patient.proc.pid)
      controller.abort("user changed their mind")
      await expect(pending).rejects.toThrow()
      await patient.waitForStderr(/tool interpreters_brainfuck exit 130 \d+ms/)
      expect(await waitUntil(() => !threadAlive(patient.proc.pid!, busy.tid))).toBe(true)
    } finally {
      await patientClient.close()
      await patient.stop()
    }
  })
})

describe("tools/call validated by the SDK's CallToolRequestSchema", () => {
  const request = (params: Record<string, unknown>) =>
    client.request({ method: "tools/call", params }, CallToolResultSchema)

  it("refuses a request the schema refuses with -32602 and a message naming the field, before any command runs", async () => {
    const from = server.stderr().length
    const refused = await request({
      name: "interpreters_brainfuck",
      arguments: { file: "hello.bf" },
      _meta: { progressToken: { not: "a token" } }
    }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(McpError)
    expect((refused as McpError).code).toBe(ErrorCode.InvalidParams)
    expect((refused as McpError).message).toMatch(/Invalid params: params\._meta\.progressToken: Invalid input/)
    await server.waitForStderr(/tool interpreters_brainfuck exit 1 \d+ms\n/, undefined, from)
  })

  it("answers a name that is not a string with -32602 and arguments that are not an object with the tool's argument error", async () => {
    await expect(request({ name: 42, arguments: {} })).rejects.toThrow(
      "MCP error -32602: tools/call needs the tool's name as a string"
    )
    const result = await request({ name: "interpreters_brainfuck", arguments: ["hello.bf"] })
    expect({ text: textOf(result), isError: result.isError }).toEqual({
      text: "Arguments for tool interpreters_brainfuck must be an object.\nexit code: 1",
      isError: true
    })
  })
})

describe("HTTP security and transport", () => {
  it("answers GET and DELETE with 405 (stateless)", async () => {
    expect(await rawPost(server.url, {}, "GET")).toBe(405)
    expect(await rawPost(server.url, {}, "DELETE")).toBe(405)
  })

  it("rejects a foreign Host header with 403 and accepts local names", async () => {
    expect(await rawPost(server.url, { host: "evil.example.com" })).toBe(403)
    expect(await rawPost(server.url, { host: "evil.example.com:5100" })).toBe(403)
    const port = new URL(server.url).port
    expect(await rawPost(server.url, { host: `localhost:${port}` })).toBe(200)
    expect(await rawPost(server.url, { host: `127.0.0.1:${port}` })).toBe(200)
    expect(await rawPost(server.url, { host: `[::1]:${port}` })).toBe(200)
  })

  it("rejects a non-loopback Origin with 403", async () => {
    expect(await rawPost(server.url, { origin: "http://evil.example.com" })).toBe(403)
    expect(await rawPost(server.url, { origin: "null" })).toBe(403)
    expect(await rawPost(server.url, { origin: "http://localhost:3000" })).toBe(200)
  })

  it("shares stoat's loopback guard: any literal loopback Host passes, and an SDK client sent from a foreign page is refused with 403", async () => {
    const port = new URL(server.url).port
    expect(await rawPost(server.url, { host: `127.0.0.2:${port}` })).toBe(200)
    expect(await rawPost(server.url, { host: `localhost.evil.example.com:${port}` })).toBe(403)
    const rebound = new Client({ name: "rebinding-page", version: "1.0.0" })
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { origin: "http://evil.example.com" } }
    })
    await expect(rebound.connect(transport)).rejects.toMatchObject({
      code: 403,
      message: expect.stringContaining("is not a loopback origin")
    })
    await transport.close()
  })
})
