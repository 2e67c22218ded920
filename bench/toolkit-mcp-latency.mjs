#!/usr/bin/env node
// P9: p50 latency of `tools/call interpreters_brainfuck` (hello world) over Streamable HTTP
// against a real `toolkit mcp serve` process. Target: p50 <= 20 ms.
// Side by side, the same client calls a bare SDK server (stateless HTTP, a fresh Server per
// request, answering a constant) so the toolkit's own overhead shows as a ratio.
// P11: p50 of `tools/list` while 4 calls are busy in endless Brainfuck loops, against its idle
// p50 on the same server. Target: <= 2x.
//
// Usage: node bench/toolkit-mcp-latency.mjs [--calls 200] [--warmup 20] [--rounds 5]
// Needs a built toolkit: (cd packages/toolkit-mcp && pnpm build)
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const pkg = join(root, "packages/toolkit-mcp")
const sdk = (path) => import(pathToFileURL(join(pkg, "node_modules/@modelcontextprotocol/sdk/dist/esm", path)).href)
const { Client } = await sdk("client/index.js")
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js")
const { Server } = await sdk("server/index.js")
const { StreamableHTTPServerTransport } = await sdk("server/streamableHttp.js")
const { CallToolRequestSchema, ListToolsRequestSchema } = await sdk("types.js")

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const CALLS = arg("calls", 200)
const WARMUP = arg("warmup", 20)
const ROUNDS = arg("rounds", 5)
const HELLO =
  "++++++++[>++++[>++>+++>+++>+<<<<-]>+>+>->>+[<]<-]>>.>---.+++++++..+++.>>.<-.<.+++.------.--------.>>+.>++."

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
const summary = (times) => {
  const sorted = [...times].sort((a, b) => a - b)
  return { p50: percentile(sorted, 50), p90: percentile(sorted, 90), p99: percentile(sorted, 99) }
}

const connect = async (url) => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return client
}

const measure = async (url, call) => {
  const client = await connect(url)
  for (let i = 0; i < WARMUP; i++) await call(client)
  const times = []
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now()
    await call(client)
    times.push(performance.now() - started)
  }
  await client.close()
  return summary(times)
}

// The toolkit server.
const dir = mkdtempSync(join(tmpdir(), "toolkit-bench-"))
writeFileSync(join(dir, "hello.bf"), HELLO)
writeFileSync(join(dir, "loop.bf"), "+[]")
const child = spawn(process.execPath, [join(pkg, "bin/run.js"), "mcp", "serve", "--port", "0"], {
  cwd: dir,
  env: { ...process.env, XDG_CONFIG_HOME: join(dir, "xdg") },
  stdio: ["ignore", "pipe", "ignore"]
})
const url = await new Promise((resolvePromise, reject) => {
  let out = ""
  child.stdout.on("data", (chunk) => {
    out += chunk
    const match = /on (http:\/\/\S+\/mcp)\n/.exec(out)
    if (match) resolvePromise(match[1])
  })
  child.on("exit", (code) => reject(new Error(`toolkit mcp serve exited with ${code}: ${out}`)))
})

// The baseline: a bare low-level SDK server, the same transport setup, a constant answer.
const bare = createServer(async (req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405, { allow: "POST" }).end()
    return
  }
  let body = ""
  for await (const chunk of req) body += chunk
  const server = new Server({ name: "bare", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }))
  server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: "Hello World!\n" }] }))
  const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true })
  res.on("close", () => {
    void transport.close()
    void server.close()
  })
  await server.connect(transport)
  await transport.handleRequest(req, res, JSON.parse(body))
})
await new Promise((r) => bare.listen(0, "127.0.0.1", r))
const bareUrl = `http://127.0.0.1:${bare.address().port}/mcp`

try {
  const call = async (client) => {
    const result = await client.callTool({ name: "interpreters_brainfuck", arguments: { file: "hello.bf" } })
    if (result.isError || result.content[0].text !== "Hello World!\n")
      throw new Error(`unexpected result: ${JSON.stringify(result)}`)
  }
  const baseline = await measure(bareUrl, (client) => client.callTool({ name: "x", arguments: {} }))
  const toolkit = await measure(url, call)
  const fmt = (r) => `p50 ${r.p50.toFixed(2)} ms  p90 ${r.p90.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms`
  console.log(`P9 tools/call interpreters_brainfuck (hello world), ${CALLS} calls after ${WARMUP} warm-up, HTTP`)
  console.log(`  toolkit mcp serve : ${fmt(toolkit)}`)
  console.log(`  bare SDK server   : ${fmt(baseline)}`)
  console.log(`  ratio p50 toolkit/bare: ${(toolkit.p50 / baseline.p50).toFixed(2)}x`)
  console.log(`  target p50 <= 20 ms: ${toolkit.p50 <= 20 ? "met" : "NOT met"}`)

  // Idle and busy rounds alternate, so load from other programs on the machine falls on both alike.
  const list = (client) => client.listTools()
  const lister = await connect(url)
  for (let i = 0; i < WARMUP; i++) await list(lister)
  const sample = async (into, n) => {
    for (let i = 0; i < n; i++) {
      const started = performance.now()
      await list(lister)
      into.push(performance.now() - started)
    }
  }
  const idleTimes = []
  const busyTimes = []
  const busy = await connect(url)
  for (let round = 0; round < ROUNDS; round++) {
    await sample(idleTimes, Math.ceil(CALLS / ROUNDS))
    const stop = new AbortController()
    const loops = Array.from({ length: 4 }, () =>
      busy
        .callTool({ name: "interpreters_brainfuck", arguments: { file: "loop.bf" } }, undefined, {
          signal: stop.signal,
          timeout: 600_000
        })
        .catch(() => undefined)
    )
    // Let the loops reach their workers (and the ones that wait, the queue) before measuring.
    await new Promise((r) => setTimeout(r, 500))
    await sample(busyTimes, Math.ceil(CALLS / ROUNDS))
    stop.abort()
    await Promise.all(loops)
    // Cancelling terminated the busy workers; let their replacements start before the next idle round.
    await new Promise((r) => setTimeout(r, 1500))
  }
  await Promise.all([busy.close(), lister.close()])
  const idle = summary(idleTimes)
  const loaded = summary(busyTimes)
  console.log(
    `P11 tools/list, ${idleTimes.length} calls idle and ${busyTimes.length} while 4 calls run endless Brainfuck loops, in ${ROUNDS} alternating rounds, HTTP`
  )
  console.log(`  idle              : ${fmt(idle)}`)
  console.log(`  4 endless loops   : ${fmt(loaded)}`)
  console.log(`  ratio p50 busy/idle: ${(loaded.p50 / idle.p50).toFixed(2)}x`)
  console.log(`  target <= 2x: ${loaded.p50 <= 2 * idle.p50 ? "met" : "NOT met"}`)
} finally {
  child.kill("SIGTERM")
  bare.close()
  rmSync(dir, { recursive: true, force: true })
}
