#!/usr/bin/env node
// P1 (SPEC §4): `tools/call list_vms` against a real `stoat mcp` process, over stdio and over
// Streamable HTTP. Targets: stoat's own work per call, timed inside the server process (its p50
// from a request's arrival to its answer, minus a bare SDK server's answering a constant through
// the same transport), p50 <= 0.3 ms; the client-observed p50 <= 2 ms over stdio and <= 5 ms over
// HTTP. The bare server's client p50 is printed beside stoat's.
// P2: spawn of `stoat mcp` until `initialize` is answered, median of --spawns runs, side by side
// with `node -e 0` (targets: <= 300 ms and <= 3x).
//
// Usage: node bench/mcp.mjs [--calls 200] [--warmup 20] [--spawns 11]
// Needs a built CLI: pnpm build
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const stoat = join(root, "packages/cli/bin/run.js")
const sdkDir = join(root, "packages/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm")
const sdk = (path) => import(pathToFileURL(join(sdkDir, path)).href)
const { Client } = await sdk("client/index.js")
const { StdioClientTransport } = await sdk("client/stdio.js")
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js")

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const CALLS = arg("calls", 200)
const WARMUP = arg("warmup", 20)
const SPAWNS = arg("spawns", 11)

const home = mkdtempSync(join(tmpdir(), "stoat-bench-mcp-"))
// A data root as a user has one (an empty VM list to read), not a missing folder.
spawnSync(process.execPath, [stoat, "ls"], { env: { ...process.env, STOAT_HOME: home } })
const env = { ...process.env, STOAT_HOME: home }
// The bench measures latency, not the rate limiter: buckets large enough never to refuse.
const UNLIMITED = ["--tool-burst", "1000000", "--tool-rate", "1000000", "--burst", "1000000", "--rate", "1000000"]

// The baseline: the SDK's own Server with one tool answering a constant, stdio or HTTP. It declares
// stoat's own list_vms definition (output schema included), so the client checks both answers the
// same way and the ratio is the servers' difference alone.
const listVmsTool = await (async () => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [stoat, "mcp"], env, stderr: "ignore" })
  )
  try {
    return (await client.listTools()).tools.find((tool) => tool.name === "list_vms")
  } finally {
    await client.close()
  }
})()
const bare = join(home, "bare-server.mjs")
writeFileSync(
  bare,
  `import { createServer } from "node:http"
const sdk = (path) => import(${JSON.stringify(pathToFileURL(sdkDir).href)} + "/" + path)
const { Server } = await sdk("server/index.js")
const { StdioServerTransport } = await sdk("server/stdio.js")
const { StreamableHTTPServerTransport } = await sdk("server/streamableHttp.js")
const { CallToolRequestSchema, ListToolsRequestSchema } = await sdk("types.js")
const make = () => {
  const server = new Server({ name: "bare", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [${JSON.stringify(listVmsTool)}] }))
  server.setRequestHandler(CallToolRequestSchema, async () => ({ content: [{ type: "text", text: '{"vms":[]}' }], structuredContent: { vms: [] } }))
  return server
}
const port = process.argv[2]
if (port === undefined) await make().connect(new StdioServerTransport())
else {
  const transports = new Map()
  createServer(async (req, res) => {
    const chunks = []
    for await (const chunk of req) chunks.push(chunk)
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined
    let transport = transports.get(req.headers["mcp-session-id"])
    if (!transport) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID(), onsessioninitialized: (id) => transports.set(id, transport) })
      await make().connect(transport)
    }
    await transport.handleRequest(req, res, body)
  }).listen(Number(port), "127.0.0.1", () => process.stdout.write("ready\\n"))
}
`
)

// Inside each measured server: how long it took from a request's arrival to its answer (stdio: a
// chunk read until the next write; HTTP: a POST until its response finished), written to a file as
// the process exits. The difference between the two servers' numbers is stoat's own work.
const serverTimes = join(home, "server-times.jsonl")
const serverTimer = join(home, "server-timer.cjs")
writeFileSync(
  serverTimer,
  `const { appendFileSync } = require("node:fs")
const { Server } = require("node:http")
const times = []
let arrived = 0
const read = process.stdin.emit
process.stdin.emit = function (event, ...rest) {
  if (event === "data") arrived = performance.now()
  return read.call(this, event, ...rest)
}
const write = process.stdout.write
process.stdout.write = function (...rest) {
  if (arrived !== 0) times.push(performance.now() - arrived)
  arrived = 0
  return write.apply(this, rest)
}
const emit = Server.prototype.emit
Server.prototype.emit = function (event, req, res) {
  if (event === "request" && req.method === "POST") {
    const started = performance.now()
    res.once("finish", () => times.push(performance.now() - started))
  }
  return emit.apply(this, arguments)
}
process.on("SIGTERM", () => process.exit(0))
process.on("exit", () => appendFileSync(${JSON.stringify(serverTimes)}, JSON.stringify(times) + "\\n"))
`
)
const timedEnv = { ...env, NODE_OPTIONS: `${env.NODE_OPTIONS ?? ""} --require ${serverTimer}`.trim() }

/** The measured calls' times inside the server process that just exited: its last CALLS requests. */
const takeServerTimes = async () => {
  for (let attempt = 0; attempt < 50 && !existsSync(serverTimes); attempt++)
    await new Promise((done) => setTimeout(done, 100))
  const lines = readFileSync(serverTimes, "utf8").trim().split("\n")
  rmSync(serverTimes)
  return JSON.parse(lines.at(-1)).slice(-CALLS)
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
const median = (values) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50
  )
const ms = (value) => `${value.toFixed(2)} ms`

const freePort = () =>
  new Promise((done) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => done(port))
    })
  })

/** Times CALLS list_vms calls after WARMUP unmeasured ones; a failed call stops the bench. */
const timeCalls = async (client) => {
  const call = () => client.callTool({ name: "list_vms", arguments: {} })
  for (let i = 0; i < WARMUP; i++) await call()
  const times = []
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now()
    const result = await call()
    times.push(performance.now() - started)
    if (result.isError) throw new Error(`list_vms failed: ${JSON.stringify(result.content)}`)
  }
  return times
}

const overStdio = async (args) => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  const transport = new StdioClientTransport({ command: process.execPath, args, env: timedEnv, stderr: "ignore" })
  await client.connect(transport)
  let clientTimes
  try {
    clientTimes = await timeCalls(client)
  } finally {
    await client.close()
  }
  return { client: clientTimes, server: await takeServerTimes() }
}

/** Starts a server process, waits until its port answers, measures, stops it. */
const overHttp = async (args) => {
  const port = await freePort()
  const child = spawn(process.execPath, [...args(port)], { env: timedEnv, stdio: ["ignore", "ignore", "ignore"] })
  const exited = new Promise((done) => child.once("exit", done))
  let clientTimes
  try {
    const url = new URL(`http://127.0.0.1:${port}/mcp`)
    for (let attempt = 0; ; attempt++) {
      try {
        const client = new Client({ name: "bench", version: "1.0.0" })
        await client.connect(new StreamableHTTPClientTransport(url))
        try {
          clientTimes = await timeCalls(client)
          break
        } finally {
          await client.close()
        }
      } catch (error) {
        if (attempt > 100) throw error
        await new Promise((done) => setTimeout(done, 100))
      }
    }
  } finally {
    child.kill()
  }
  await exited
  return { client: clientTimes, server: await takeServerTimes() }
}

/**
 * p50 of each server, side by side and fair to both: the bench's own client code is first warmed
 * on a discarded round (otherwise whichever server goes first pays for the client's JIT), then each
 * server gets two fresh processes in the order stoat, bare, bare, stoat, and its calls are pooled.
 */
const compare = async (measure, servers) => {
  await measure(servers.bare)
  const times = { stoat: { client: [], server: [] }, bare: { client: [], server: [] } }
  for (const name of ["stoat", "bare", "bare", "stoat"]) {
    const { client, server } = await measure(servers[name])
    times[name].client.push(...client)
    times[name].server.push(...server)
  }
  const p50s = (name) => ({ client: median(times[name].client), server: median(times[name].server) })
  return { stoat: p50s("stoat"), bare: p50s("bare") }
}

const spawnToInitialize = async () => {
  const started = performance.now()
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [stoat, "mcp"], env, stderr: "ignore" })
  )
  const elapsed = performance.now() - started
  await client.close()
  return elapsed
}

const nodeStartup = () => {
  const started = performance.now()
  spawnSync(process.execPath, ["-e", "0"])
  return performance.now() - started
}

try {
  const p1 = {
    stdio: await compare(overStdio, { stoat: [stoat, "mcp", ...UNLIMITED], bare: [bare] }),
    http: await compare(overHttp, {
      stoat: (port) => [stoat, "mcp", "--http", `127.0.0.1:${port}`, ...UNLIMITED],
      bare: (port) => [bare, String(port)]
    })
  }

  const spawns = []
  const nodes = []
  for (let i = 0; i < SPAWNS; i++) {
    spawns.push(await spawnToInitialize())
    nodes.push(nodeStartup())
  }
  const p2 = { stoat: median(spawns), node: median(nodes) }

  const CLIENT_TARGET = { stdio: 2, http: 5 }
  const OWN_TARGET = 0.3
  const verdict = (value, target) => (value <= target ? "met" : "NOT met")
  console.log(`P1 tools/call list_vms p50 (2 processes each, ${CALLS} calls after ${WARMUP} warm-up per process):`)
  console.log(
    `  stoat's own work, inside the server (stoat minus bare, arrival to answer), target <= ${OWN_TARGET} ms:`
  )
  for (const [transport, { stoat: own, bare: base }] of Object.entries(p1)) {
    const work = own.server - base.server
    console.log(
      `  ${transport.padEnd(5)} ${ms(work)} ${verdict(work, OWN_TARGET)}  (stoat ${ms(own.server)}, bare ${ms(base.server)})`
    )
  }
  console.log("  client-observed, target <= 2 ms stdio, <= 5 ms HTTP:")
  for (const [transport, { stoat: own, bare: base }] of Object.entries(p1))
    console.log(
      `  ${transport.padEnd(5)} stoat ${ms(own.client)} ${verdict(own.client, CLIENT_TARGET[transport])}  (bare SDK server ${ms(base.client)}, ratio ${(own.client / base.client).toFixed(2)}x)`
    )
  console.log(`P2 spawn -> initialize answered, median of ${SPAWNS}:`)
  console.log(
    `  stoat mcp ${ms(p2.stoat)} (target <= 300 ms)  node -e 0 ${ms(p2.node)}  ratio ${(p2.stoat / p2.node).toFixed(2)}x (target <= 3x)`
  )
} finally {
  rmSync(home, { recursive: true, force: true })
}
