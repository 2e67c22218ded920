import { execFileSync, spawn, type ChildProcess } from "node:child_process"
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js"
import { ManagedRuntime } from "effect"
import { FakeGuestState, FakeHypervisorState, testLayer } from "@stoat/core/testing"
import { ERROR_META_KEY } from "@stoat/wire"
import { createServer, makeStoatMcp, type RateLimits } from "../src/index.js"

/** The built `stoat` binary (packages/cli), as a person or MCP client would run it. */
export const BIN = fileURLToPath(new URL("../../cli/bin/run.js", import.meta.url))

/** A fresh data root that has been used before (its logs/ folder exists, so calls are audited). */
export const tempHome = (): string => {
  const home = mkdtempSync(join(tmpdir(), "stoat-mcp-"))
  mkdirSync(join(home, "logs"))
  return home
}

/** A minimal stopped VM written by hand, with the given agent_access. */
export const writeVm = (home: string, name: string, access: string, sshport = 2222): void => {
  mkdirSync(join(home, name), { recursive: true })
  writeFileSync(
    join(home, name, "vm.toml"),
    [
      `name = "${name}"`,
      `mode = "live"`,
      `os = "tiny"`,
      `image = "tiny"`,
      `backend = "direct"`,
      `ram = 256`,
      `cpus = 1`,
      `disk = "1G"`,
      `sshport = ${sshport}`,
      `sshuser = "root"`,
      `agent_access = "${access}"`,
      ""
    ].join("\n")
  )
}

/** `cwd`: the directory the server starts in, whose stoat.toml, stoat.lock and .stoat/ its project tools use. */
export const stdioClient = async (
  home: string,
  args: ReadonlyArray<string> = [],
  command: ReadonlyArray<string> = ["mcp"],
  options: { readonly cwd?: string; readonly env?: Record<string, string> } = {}
): Promise<Client> => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, ...command, ...args],
    // No recipe index unless given: a search never reaches the network.
    env: {
      ...(process.env as Record<string, string>),
      STOAT_HOME: home,
      STOAT_INDEX: join(home, "no-index"),
      NO_COLOR: "1",
      ...options.env
    },
    stderr: "pipe",
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {})
  })
  const client = new Client({ name: "stoat-test", version: "1.0.0" })
  await client.connect(transport)
  return client
}

export interface HttpServerProcess {
  readonly child: ChildProcess
  readonly url: string
  readonly stderr: () => string
  readonly stop: () => Promise<number | null>
}

/** Starts `stoat mcp --http <address>` and resolves once it prints the address it serves. */
export const startHttp = (home: string, args: ReadonlyArray<string>): Promise<HttpServerProcess> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "mcp", ...args], {
      env: { ...process.env, STOAT_HOME: home, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stderr = ""
    let stdout = ""
    const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
    child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr!.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
      const match = /serving Streamable HTTP at (\S+)/.exec(stderr)
      if (match) {
        resolve({
          child,
          url: match[1]!,
          stderr: () => stderr,
          stop: async () => {
            child.kill("SIGTERM")
            return exited
          }
        })
      }
    })
    void exited.then((code) => reject(new Error(`stoat mcp exited ${code} before serving:\n${stderr}${stdout}`)))
  })

export const httpClient = async (url: string, headers: Record<string, string> = {}): Promise<Client> => {
  const client = new Client({ name: "stoat-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
  return client
}

/** Runs the built `stoat` to its end (the CLI suite's own helper). */
export { stoat as run } from "../../cli/test/helpers.js"

export interface InProcessOptions {
  readonly limits?: Partial<RateLimits>
  readonly heartbeatMs?: number
  readonly now?: () => number
  /** Declare elicitation and answer every request with this. */
  readonly elicit?: (message: string) => ElicitResult
  /** The recipe index; default a folder that does not exist, so no test reaches the network. */
  readonly index?: string
  /** The server's working directory (its project); default none. */
  readonly projectDir?: string
  /** False: the --no-confirm server. */
  readonly confirmDeletions?: boolean
  readonly callBudgetSeconds?: number
}

/** The server's shared state over the in-memory hypervisor and guest, on a temp data root. */
export const fakeMcp = (options: Omit<InProcessOptions, "elicit"> = {}) => {
  const root = tempHome()
  const hypervisor = new FakeHypervisorState()
  const guest = new FakeGuestState()
  const runtime = ManagedRuntime.make(
    testLayer({
      root,
      hypervisor,
      guest,
      index: options.index ?? join(root, "no-index"),
      ...(options.projectDir !== undefined ? { projectDir: options.projectDir } : {})
    })
  )
  const mcp = makeStoatMcp({
    runtime,
    ...(options.limits ? { limits: options.limits } : { limits: { toolBurst: 1e6, burst: 1e6 } }),
    ...(options.heartbeatMs !== undefined ? { heartbeatMs: options.heartbeatMs } : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.confirmDeletions !== undefined ? { confirmDeletions: options.confirmDeletions } : {}),
    ...(options.callBudgetSeconds !== undefined ? { callBudgetSeconds: options.callBudgetSeconds } : {})
  })
  return { mcp, root, hypervisor, guest, runtime }
}

/** An SDK client that declares elicitation when `elicit` is given, recording each question. */
export const testClient = (elicit?: InProcessOptions["elicit"]) => {
  const client = new Client(
    { name: "stoat-test", version: "1.0.0" },
    { capabilities: elicit ? { elicitation: { form: {} } } : {} }
  )
  const elicited: string[] = []
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(request.params.message)
      return elicit(request.params.message)
    })
  }
  return { client, elicited }
}

/** The server over the in-memory hypervisor and guest, and an SDK client linked to it in memory. */
export const inProcess = async (options: InProcessOptions = {}) => {
  const fake = fakeMcp(options)
  const server = createServer(fake.mcp)
  const { client, elicited } = testClient(options.elicit)
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair()
  await Promise.all([server.connect(serverSide), client.connect(clientSide)])
  return {
    client,
    root: fake.root,
    hypervisor: fake.hypervisor,
    guest: fake.guest,
    elicited,
    close: async () => {
      await client.close()
      await fake.runtime.dispose()
    }
  }
}

/** What `Client.callTool` resolves to, as far as these checks read it (the SDK marks every field optional). */
type AnyResult = {
  isError?: boolean | undefined
  content?: unknown
  structuredContent?: unknown
  _meta?: Record<string, unknown> | undefined
}

/** The ErrorInfo of a failed call, after checking the whole seed-000 envelope around it. */
export const errorOf = (result: AnyResult): { code: string; message: string; subject?: string } => {
  if (result.isError !== true) throw new Error(`expected an error result, got ${JSON.stringify(result)}`)
  const info = result._meta?.[ERROR_META_KEY] as { code: string; message: string }
  const content = result.content as Array<{ type: string; text: string }>
  if (content.length !== 2 || content[0]?.type !== "text" || content[1]?.type !== "text")
    throw new Error(`expected two text blocks, got ${JSON.stringify(content)}`)
  if (content[0].text !== info.message)
    throw new Error(`first block ${JSON.stringify(content[0].text)} is not the message ${JSON.stringify(info.message)}`)
  const second = JSON.parse(content[1].text) as { error: unknown }
  if (JSON.stringify(second) !== JSON.stringify({ error: info }))
    throw new Error(`second block ${content[1].text} is not {"error": ErrorInfo}`)
  return info
}

/** The structured result of a successful call, after checking the text block carries the same JSON. */
export const dataOf = <T = any>(result: AnyResult): T => {
  if (result.isError) throw new Error(`expected success, got ${JSON.stringify(result.content)}`)
  const content = result.content as Array<{ type: string; text: string }>
  if (JSON.stringify(JSON.parse(content[0]!.text)) !== JSON.stringify(result.structuredContent))
    throw new Error("text block and structuredContent differ")
  return result.structuredContent as T
}

/** Creates and starts a VM on the in-memory hypervisor whose sshd never answers: a wait on it runs until its timeout. */
export const unreachableVm = async (client: Client, guest: FakeGuestState, name: string): Promise<void> => {
  dataOf(await client.callTool({ name: "create", arguments: { name, image: "tiny" } }))
  const vm = dataOf<{ ssh_port: number }>(await client.callTool({ name: "start", arguments: { vm: name } }))
  guest.unreachablePorts.add(vm.ssh_port)
}

/** The e2e suites need QEMU; without it they fail loudly instead of skipping. */
export const requireQemu = (): void => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}
