#!/usr/bin/env node
// P12: what the default `tools/list` of `stoat mcp` costs an agent in context: bytes of its JSON
// (the `tools` array as the server sends it), against the 40 KB target; then the same with
// --read-only and with a few --toolsets, and where the bytes go (descriptions, input and output
// schemas).
//
// Usage: node bench/tools-list.mjs
// Needs a built CLI: pnpm build
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const stoat = join(root, "packages/cli/bin/run.js")
const sdkDir = join(root, "packages/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm")
const sdk = (path) => import(pathToFileURL(join(sdkDir, path)).href)
const { Client } = await sdk("client/index.js")
const { StdioClientTransport } = await sdk("client/stdio.js")

const TARGET = 40 * 1024
const home = mkdtempSync(join(tmpdir(), "stoat-bench-tools-list-"))
const bytes = (value) => Buffer.byteLength(JSON.stringify(value))
const kb = (n) => `${(n / 1024).toFixed(1)} KB`

const listTools = async (flags) => {
  const client = new Client({ name: "bench", version: "1.0.0" })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [stoat, "mcp", ...flags],
      env: { ...process.env, STOAT_HOME: home },
      stderr: "ignore"
    })
  )
  try {
    return (await client.listTools()).tools
  } finally {
    await client.close()
  }
}

try {
  const tools = await listTools([])
  const total = bytes({ tools })
  const part = (pick) => tools.reduce((sum, tool) => sum + (pick(tool) === undefined ? 0 : bytes(pick(tool))), 0)
  console.log(
    `P12 default tools/list: ${tools.length} tools, ${total} bytes (${kb(total)}), target <= ${kb(TARGET)}: ${total <= TARGET ? "met" : "NOT met"}`
  )
  console.log(
    `  descriptions ${kb(part((t) => t.description))}  inputSchemas ${kb(part((t) => t.inputSchema))}  outputSchemas ${kb(part((t) => t.outputSchema))}`
  )
  for (const flags of [
    ["--read-only"],
    ["--toolsets", "vm"],
    ["--toolsets", "vm,guest"],
    ["--toolsets", "vm,guest,jobs", "--read-only"]
  ]) {
    const subset = await listTools(flags)
    console.log(
      `  ${flags.join(" ").padEnd(36)} ${String(subset.length).padStart(2)} tools, ${kb(bytes({ tools: subset }))}`
    )
  }
} finally {
  rmSync(home, { recursive: true, force: true })
}
