import { execFileSync } from "node:child_process"
import { closeSync, ftruncateSync, openSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import {
  busiestThread,
  connect,
  HELLO_BF,
  rawHttp,
  serve,
  tempHome,
  textOf,
  threadAlive,
  threadNice,
  toolkit,
  waitForQuiet,
  waitUntil,
  type Home,
  type Serving
} from "./helpers.js"

/**
 * The hostile run of issue 12, reproduction by reproduction, against real `toolkit mcp serve`
 * processes (SDK Client over Streamable HTTP, or raw HTTP for what a client would never send)
 * and the real CLI. The servers run under a virtual memory limit, so a regression that reads
 * /dev/zero fails fast instead of swapping the machine, and every call that used to block is
 * bounded by a client-side timeout.
 */

const MEMORY_LIMIT_KB = 4_000_000
/** A call that blocks gets this long before the test fails (the fixed server answers in milliseconds). */
const BLOCKED_MS = 15_000

let home: Home
let server: Serving
let client: Client
let fifo: string

const call = async (name: string, args: Record<string, unknown>, c: Client = client) => {
  const result = await c.callTool({ name, arguments: args }, undefined, { timeout: BLOCKED_MS })
  return { text: textOf(result), isError: result.isError === true }
}

/** The tool-call lines of a server's stderr written after `from` characters. */
const callLines = (s: Serving, from: number): string[] =>
  s
    .stderr()
    .slice(from)
    .split("\n")
    .filter((line) => line.startsWith("tool "))

/** A raw JSON-RPC POST, for messages no SDK client sends. */
const rawRpc = async (body: string): Promise<{ status: number; json: any }> => {
  const { status, text } = await rawHttp(server.url, { body }, BLOCKED_MS)
  return { status, json: text === "" ? undefined : JSON.parse(text) }
}

/** Two strings this long are the most levenshtein-distance compares: seconds of work here. */
const LONGEST_PAIR = 20_000

beforeAll(async () => {
  home = tempHome()
  home.file("hello.bf", HELLO_BF)
  fifo = join(home.dir, "f.bf")
  execFileSync("mkfifo", [fifo])
  const sparse = openSync(home.file("sparse.bf", ""), "r+")
  ftruncateSync(sparse, 3 * 1024 ** 3)
  closeSync(sparse)
  expect((await toolkit(home, ["mcp", "save", "everything", "--include", "interpreters,strings,oauth"])).code).toBe(0)
  server = await serve(home, ["--profile", "everything", "--port", "0"], { memoryLimitKb: MEMORY_LIMIT_KB })
  client = await connect(server.url)
})

afterAll(async () => {
  await client?.close()
  await server?.stop()
  home?.cleanup()
})

describe("1. memory: /dev/zero and endless output", () => {
  it("tools/call interpreters_brainfuck {file: /dev/zero} is refused, and the server lives on", async () => {
    expect(await call("interpreters_brainfuck", { file: "/dev/zero" })).toEqual({
      text: "Error: Brainfuck program file is a device, not a regular file: /dev/zero\nexit code: 1",
      isError: true
    })
    expect(await call("interpreters_brainfuck", { file: "hello.bf" })).toEqual({
      text: "Hello World!\n",
      isError: false
    })
  })

  it("toolkit interpreters brainfuck --file /dev/zero fails with an Error line, exit 1", async () => {
    expect(
      await toolkit(home, ["interpreters", "brainfuck", "--file", "/dev/zero"], {
        memoryLimitKb: MEMORY_LIMIT_KB,
        killAfterMs: BLOCKED_MS
      })
    ).toMatchObject({
      code: 1,
      stdout: "Error: Brainfuck program file is a device, not a regular file: /dev/zero\n"
    })
  })

  it("stdin is read up to the input limit on the command line", async () => {
    expect(
      await toolkit(home, ["interpreters", "brainfuck", "--file", "-"], {
        input: Buffer.alloc(5 * 1024 * 1024),
        memoryLimitKb: MEMORY_LIMIT_KB,
        killAfterMs: BLOCKED_MS
      })
    ).toMatchObject({
      code: 1,
      stdout: "Error: stdin holds more than 4 MiB\n"
    })
  })

  it("a program printing forever is stopped at the output limit of a call", async () => {
    home.file("spew.bf", "++++++++[>++++++++<-]>+[.]") // "AAAA…" forever
    const result = await call("interpreters_brainfuck", { file: "spew.bf" })
    expect(result.isError).toBe(true)
    expect(
      result.text.endsWith(
        "\nError: the command printed more than 4 MiB, the most a tool call returns; it was stopped\nexit code: 1"
      )
    ).toBe(true)
    expect(result.text.startsWith("A".repeat(4 * 1024 * 1024))).toBe(true)
  })
})

describe("2. blocking: FIFOs, huge files, quadratic work", () => {
  it("a FIFO is refused at once, as input and as output, on the server and the command line", async () => {
    expect(await call("interpreters_brainfuck", { file: fifo })).toEqual({
      text: `Error: Brainfuck program file is a FIFO, not a regular file: ${fifo}\nexit code: 1`,
      isError: true
    })
    home.file("text.txt", "some text")
    expect(await call("strings_reverse", { "in-file": "text.txt", "out-file": fifo })).toEqual({
      text: `Error: output file is a FIFO, not a regular file: ${fifo}\nexit code: 1`,
      isError: true
    })
    expect(
      await toolkit(home, ["interpreters", "brainfuck", "--file", "f.bf"], { killAfterMs: BLOCKED_MS })
    ).toMatchObject({
      code: 1,
      stdout: "Error: Brainfuck program file is a FIFO, not a regular file: f.bf\n"
    })
  })

  it("a directory is refused like the others", async () => {
    expect(await call("strings_flesch-reading-ease", { "in-file": home.dir })).toEqual({
      text: `Error: Input file is a directory, not a regular file: ${home.dir}\nexit code: 1`,
      isError: true
    })
  })

  it("a 3 GB sparse file is refused by its size, without reading it", async () => {
    expect(await call("interpreters_brainfuck", { file: "sparse.bf" })).toEqual({
      text: "Error: Brainfuck program file is larger than 4 MiB: sparse.bf\nexit code: 1",
      isError: true
    })
    const { tools } = await client.listTools()
    expect(tools.find((t) => t.name === "interpreters_brainfuck")!.inputSchema.properties!["file"]).toMatchObject({
      description: expect.stringContaining("at most 4 MiB")
    })
  })

  it("strings_levenshtein-distance with two 50,000-character strings is refused with a clear error", async () => {
    expect(
      await call("strings_levenshtein-distance", { string1: "a".repeat(50_000), string2: "b".repeat(50_000) })
    ).toEqual({
      text: "Error: the strings are too long to compare: 50000 × 50000 characters is more than the 400,000,000 character pairs compared at most\nexit code: 1",
      isError: true
    })
  })

  it("while a long strings call runs on a worker, tools/list is answered first; cancelling it ends that worker", async () => {
    await waitForQuiet(server.proc.pid!)
    const controller = new AbortController()
    const started = server.stderr().length
    const pending = client.callTool(
      {
        name: "strings_levenshtein-distance",
        arguments: { string1: "a".repeat(LONGEST_PAIR), string2: "b".repeat(LONGEST_PAIR) }
      },
      undefined,
      { signal: controller.signal }
    )
    pending.catch(() => undefined)
    const first = await Promise.race([client.listTools().then(() => "tools/list"), pending.then(() => "call")])
    expect(first).toBe("tools/list")
    const busy = await busiestThread(server.proc.pid!, 300)
    expect(busy.tid).not.toBe(server.proc.pid) // the comparison runs on a worker thread,
    expect(threadNice(server.proc.pid!, busy.tid)).toBe(10) // below the main thread's priority
    controller.abort("changed my mind")
    await expect(pending).rejects.toThrow()
    await server.waitForStderr(/tool strings_levenshtein-distance exit 130 \d+ms/, undefined, started)
    expect(await waitUntil(() => !threadAlive(server.proc.pid!, busy.tid))).toBe(true)
    expect(callLines(server, started)).toHaveLength(1)
  })

  it("the timeout stops any command, not only the interpreters", async () => {
    const quick = await serve(home, ["--profile", "everything", "--port", "0", "--tool-timeout-ms", "100"], {
      memoryLimitKb: MEMORY_LIMIT_KB
    })
    const quickClient = await connect(quick.url)
    try {
      expect(
        await call(
          "strings_levenshtein-distance",
          { string1: "a".repeat(LONGEST_PAIR), string2: "b".repeat(LONGEST_PAIR) },
          quickClient
        )
      ).toEqual({
        text: "Tool strings_levenshtein-distance timed out after 0.1 s",
        isError: true
      })
      await quick.waitForStderr(/tool strings_levenshtein-distance exit 124 \d+ms/)
    } finally {
      await quickClient.close()
      await quick.stop()
    }
  })
})

describe("2. a full pool", () => {
  let single: Serving
  let singleClient: Client
  beforeAll(async () => {
    home.file("loop.bf", "+[]")
    single = await serve(home, ["--profile", "everything", "--port", "0", "--tool-workers", "1"], {
      memoryLimitKb: MEMORY_LIMIT_KB
    })
    singleClient = await connect(single.url)
  })
  afterAll(async () => {
    await singleClient?.close()
    await single?.stop()
  })

  it("queued calls wait for a worker, can be cancelled while waiting, and run once one is free", async () => {
    await waitForQuiet(single.proc.pid!)
    const looping = new AbortController()
    const loop = singleClient.callTool({ name: "interpreters_brainfuck", arguments: { file: "loop.bf" } }, undefined, {
      signal: looping.signal
    })
    loop.catch(() => undefined)
    expect((await busiestThread(single.proc.pid!, 300)).tid).not.toBe(single.proc.pid) // the loop has the only worker
    const waiting = new AbortController()
    const dropped = singleClient.callTool(
      { name: "interpreters_brainfuck", arguments: { file: "hello.bf" } },
      undefined,
      { signal: waiting.signal }
    )
    dropped.catch(() => undefined)
    const queued = call("interpreters_brainfuck", { file: "hello.bf" }, singleClient)
    expect((await singleClient.listTools()).tools.length).toBe(10)
    waiting.abort("not needed")
    await expect(dropped).rejects.toThrow()
    await single.waitForStderr(/tool interpreters_brainfuck exit 130 \d+ms/)
    looping.abort("done looping")
    expect(await queued).toEqual({ text: "Hello World!\n", isError: false })
  })

  it("past 64 waiting calls, a call is refused as busy (and logged), not queued without bound", async () => {
    const controller = new AbortController()
    // One runs, 64 wait, one is refused.
    const hold = Array.from({ length: 66 }, () => {
      const pending = singleClient.callTool(
        { name: "interpreters_brainfuck", arguments: { file: "loop.bf" } },
        undefined,
        { signal: controller.signal, timeout: BLOCKED_MS }
      )
      pending.catch(() => undefined)
      return pending
    })
    try {
      await single.waitForStderr(/tool interpreters_brainfuck exit 75 \d+ms/, BLOCKED_MS)
      const refused = await Promise.race(hold.map((pending) => pending.then((result) => textOf(result))))
      expect(refused).toBe(
        "Tool interpreters_brainfuck was not run: the server is busy: 64 calls are waiting; try again later."
      )
    } finally {
      controller.abort("enough")
    }
  })
})

describe("4. an oversized body", () => {
  const post = (headers: Record<string, string>, body: Buffer) => rawHttp(server.url, { headers, body }, BLOCKED_MS)
  const tooLarge = {
    jsonrpc: "2.0",
    error: { code: -32600, message: "Request body too large: at most 4 MiB" },
    id: null
  }

  it("answers 413 with a JSON-RPC error instead of resetting the connection", async () => {
    const body = Buffer.alloc(5 * 1024 * 1024, " ")
    const sent = await post({}, body)
    expect(sent.status).toBe(413)
    expect(JSON.parse(sent.text)).toEqual(tooLarge)
  })

  it("answers 413 for a chunked body that grows past the limit, and a declared length past it", async () => {
    const chunked = await post({ "transfer-encoding": "chunked" }, Buffer.alloc(5 * 1024 * 1024, " "))
    expect(chunked.status).toBe(413)
    const declared = await post({ "content-length": String(5 * 1024 * 1024) }, Buffer.alloc(5 * 1024 * 1024, " "))
    expect(declared.status).toBe(413)
    expect(JSON.parse(declared.text)).toEqual(tooLarge)
    expect((await client.listTools()).tools.length).toBe(10)
  })
})

describe("5. log injection", () => {
  it("a tool name with line breaks and escape sequences writes one escaped line", async () => {
    const from = server.stderr().length
    const name = "x\ntool interpreters_brainfuck exit 0 1ms\r\u001b[2J\u202e \\"
    expect(await call(name, {})).toEqual({ text: `Unknown tool '${name}'.`, isError: true })
    await server.waitForStderr(/tool x\\u\{a\}tool.* exit 127 \d+ms\n/, undefined, from)
    expect(callLines(server, from)).toEqual([
      expect.stringMatching(
        /^tool x\\u\{a\}tool\\u\{20\}interpreters_brainfuck\\u\{20\}exit\\u\{20\}0\\u\{20\}1ms\\u\{d\}\\u\{1b\}\[2J\\u\{202e\}\\u\{20\}\\\\ exit 127 \d+ms$/
      )
    ])
    expect(server.stderr()).not.toContain("\u001b")
  })

  it("a very long name is cut in the log", async () => {
    const from = server.stderr().length
    await call("n".repeat(100_000), {})
    await server.waitForStderr(/tool n+… exit 127 \d+ms\n/, undefined, from)
    expect(callLines(server, from)).toEqual([expect.stringMatching(new RegExp(`^tool n{128}… exit 127 \\d+ms$`))])
  })
})

describe("6. malformed tools/call params", () => {
  const callWith = (params: unknown) => rawRpc(JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/call", params }))

  it("arguments that are null, an array or a string are an argument error ending with exit code: 1, and logged", async () => {
    const from = server.stderr().length
    for (const args of [null, ["file", "hello.bf"], "file=hello.bf"]) {
      const { status, json } = await callWith({ name: "interpreters_brainfuck", arguments: args })
      expect(status).toBe(200)
      expect(json).toEqual({
        jsonrpc: "2.0",
        id: 7,
        result: {
          content: [
            { type: "text", text: "Arguments for tool interpreters_brainfuck must be an object.\nexit code: 1" }
          ],
          isError: true
        }
      })
    }
    await server.waitForStderr(/(tool interpreters_brainfuck exit 1 \d+ms\n[^]*){3}/, undefined, from)
    expect(callLines(server, from)).toEqual(
      Array.from({ length: 3 }, () => expect.stringMatching(/^tool interpreters_brainfuck exit 1 \d+ms$/))
    )
  })

  it("a name that is not a string is -32602 with a plain message, and logged", async () => {
    const from = server.stderr().length
    const { json } = await callWith({ name: 42, arguments: {} })
    expect(json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: { code: -32602, message: "MCP error -32602: tools/call needs the tool's name as a string" }
    })
    const missing = await callWith({ arguments: {} })
    expect(missing.json.error.code).toBe(-32602)
    const notObject = await callWith("interpreters_brainfuck")
    expect(notObject).toEqual({
      status: 400,
      json: { jsonrpc: "2.0", id: 7, error: { code: -32602, message: 'Invalid params: "params" must be an object' } }
    })
    await server.waitForStderr(
      /tool 42 exit 127 \d+ms\n[^]*tool \(none\) exit 127 \d+ms\n[^]*tool \(none\) exit 127 \d+ms\n/,
      undefined,
      from
    )
    expect(callLines(server, from)).toEqual([
      expect.stringMatching(/^tool 42 exit 127 \d+ms$/),
      expect.stringMatching(/^tool \(none\) exit 127 \d+ms$/),
      expect.stringMatching(/^tool \(none\) exit 127 \d+ms$/)
    ])
  })
})

describe("7. values that look like options", () => {
  it("are values, in tool calls and on the command line", async () => {
    expect(await call("strings_levenshtein-distance", { string1: "--ignore-case", string2: "x" })).toEqual({
      text: "Levenshtein distance: 13\n",
      isError: false
    })
    expect(await call("strings_levenshtein-distance", { string1: "--string2", string2: "--string2=y" })).toEqual({
      text: "Levenshtein distance: 2\n",
      isError: false
    })
    expect(await call("strings_report", { string: "--in-file" })).toMatchObject({
      text: expect.stringMatching(/^Words: +2$/m),
      isError: false
    })
    expect(await call("strings_levenshtein-distance", { string1: "\u0000a", string2: "a" })).toEqual({
      text: "Levenshtein distance: 1\n",
      isError: false
    })
    expect(
      (await toolkit(home, ["strings", "levenshtein-distance", "--string1=--ignore-case", "--string2", "x"])).stdout
    ).toBe("Levenshtein distance: 13\n")
  })
})

describe("8. JSON-RPC envelopes and argument names", () => {
  it("a message without method or jsonrpc is -32600 Invalid Request, not -32700", async () => {
    expect(await rawRpc(JSON.stringify({ jsonrpc: "2.0", id: 1 }))).toEqual({
      status: 400,
      json: { jsonrpc: "2.0", id: 1, error: { code: -32600, message: 'Invalid Request: "method" is missing' } }
    })
    expect(await rawRpc(JSON.stringify({ id: 1, method: "tools/list" }))).toEqual({
      status: 400,
      json: { jsonrpc: "2.0", id: 1, error: { code: -32600, message: 'Invalid Request: "jsonrpc" must be "2.0"' } }
    })
    expect((await rawRpc(JSON.stringify({ jsonrpc: "2.0", id: 1, method: 5 }))).json.error.code).toBe(-32600)
    expect((await rawRpc("42")).json.error.code).toBe(-32600)
    expect((await rawRpc("{")).json).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: "Parse error" }
    })
  })

  it("an empty batch, or any batch, is -32600 rather than 202", async () => {
    expect(await rawRpc("[]")).toEqual({
      status: 400,
      json: { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request: batches are not supported" } }
    })
    expect((await rawRpc(JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/list" }]))).status).toBe(400)
  })

  it("__proto__ as an argument name is an unknown argument", async () => {
    const { json } = await rawRpc(
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"interpreters_brainfuck","arguments":{"file":"hello.bf","__proto__":{"x":1}}}}'
    )
    expect(json.result).toEqual({
      content: [{ type: "text", text: "Unknown argument '__proto__' for tool interpreters_brainfuck.\nexit code: 1" }],
      isError: true
    })
  })

  it("unknown methods are -32601 and valid requests still work raw", async () => {
    expect((await rawRpc(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "resources/list" }))).json.error.code).toBe(
      -32601
    )
    const listed = await rawRpc(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }))
    expect(listed.status).toBe(200)
    expect(listed.json.result.tools).toHaveLength(10)
  })
})
