import { spawn, type ChildProcess } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"

/** The real, built binary (run `pnpm build` first). */
export const BIN = resolve(dirname(fileURLToPath(import.meta.url)), "../bin/run.js")

export interface Home {
  /** A scratch working directory. */
  readonly dir: string
  /** XDG_CONFIG_HOME for the toolkit under test. */
  readonly config: string
  readonly db: string
  readonly env: NodeJS.ProcessEnv
  readonly file: (name: string, content: string | Uint8Array) => string
  readonly cleanup: () => void
}

export const tempHome = (): Home => {
  const dir = mkdtempSync(join(tmpdir(), "toolkit-test-"))
  const config = join(dir, "xdg")
  mkdirSync(config)
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: config, HOME: join(dir, "home"), NO_COLOR: "1" }
  delete env["STOAT_BF_WORKER"]
  return {
    dir,
    config,
    db: join(config, "toolkit", "config.db"),
    env,
    file: (name, content) => {
      const path = join(dir, name)
      mkdirSync(dirname(path), { recursive: true })
      writeFileSync(path, content)
      return path
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true })
  }
}

export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  readonly raw: Buffer
}

/**
 * The command line that runs the built binary with `args`, under a memory limit when one is
 * given, so a regression that eats memory fails fast instead of exhausting the machine. It is
 * the data limit (ulimit -d): a virtual-memory limit (-v) would also refuse the address space
 * that WebAssembly reserves, which Node's fetch and Response need.
 */
const binCommand = (args: string[], memoryLimitKb?: number): [string, string[]] =>
  memoryLimitKb === undefined
    ? [process.execPath, [BIN, ...args]]
    : ["/bin/sh", ["-c", 'ulimit -d "$0" && exec "$@"', String(memoryLimitKb), process.execPath, BIN, ...args]]

export interface ToolkitOptions {
  readonly input?: string | Uint8Array
  readonly env?: NodeJS.ProcessEnv
  readonly memoryLimitKb?: number
  /** Kill the process after this long (a regression that blocks fails instead of hanging the run). */
  readonly killAfterMs?: number
}

/** Runs `toolkit <args>` to completion. stdin is `input` (closed when given, else empty). */
export const toolkit = (home: Home, args: string[], options: ToolkitOptions = {}): Promise<Run> =>
  new Promise((resolvePromise, reject) => {
    const [command, argv] = binCommand(args, options.memoryLimitKb)
    const child = spawn(command, argv, { cwd: home.dir, env: options.env ?? home.env, stdio: ["pipe", "pipe", "pipe"] })
    const killer =
      options.killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), options.killAfterMs)
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on("data", (c: Buffer) => out.push(c))
    child.stderr.on("data", (c: Buffer) => err.push(c))
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(killer)
      const raw = Buffer.concat(out)
      resolvePromise({
        code: code ?? -1,
        stdout: raw.toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        raw
      })
    })
    // A command may exit before it read all of its input (EPIPE): that is its answer, not an error here.
    child.stdin.on("error", () => undefined)
    child.stdin.end(options.input ?? "")
  })

/** A free TCP port on 127.0.0.1 (closed again before it is returned). */
export const freePort = (): Promise<number> =>
  new Promise((resolvePromise, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolvePromise(port))
    })
  })

export interface Serving {
  readonly url: string
  readonly lines: string[]
  readonly proc: ChildProcess
  /** Everything written to stderr so far. */
  readonly stderr: () => string
  /** Waits until stderr, from character `from` on (default: all of it), matches `pattern`. */
  readonly waitForStderr: (pattern: RegExp, timeoutMs?: number, from?: number) => Promise<string>
  readonly stop: () => Promise<number | null>
}

/** Starts `toolkit mcp serve <args>` and waits for its two startup lines. */
export const serve = (
  home: Home,
  args: string[] = ["--port", "0"],
  options: { memoryLimitKb?: number } = {}
): Promise<Serving> =>
  new Promise((resolvePromise, reject) => {
    const [command, argv] = binCommand(["mcp", "serve", ...args], options.memoryLimitKb)
    const proc = spawn(command, argv, { cwd: home.dir, env: home.env, stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    const waiters: Array<() => void> = []
    proc.stderr.on("data", (c: Buffer) => {
      err += c.toString("utf8")
      for (const w of waiters.splice(0)) w()
    })
    const exited = new Promise<number | null>((r) => proc.on("exit", (code) => r(code)))
    const timer = setTimeout(() => reject(new Error(`mcp serve did not start\nstdout: ${out}\nstderr: ${err}`)), 30_000)
    exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`mcp serve exited with ${code}\nstdout: ${out}\nstderr: ${err}`))
    })
    proc.stdout.on("data", (c: Buffer) => {
      out += c.toString("utf8")
      const lines = out.split("\n")
      if (lines.length >= 3 && lines[1]!.startsWith("Tools: ")) {
        clearTimeout(timer)
        const url = /on (http:\/\/\S+\/mcp)$/.exec(lines[0]!)?.[1]
        if (!url) return reject(new Error(`unexpected startup line: ${lines[0]}`))
        resolvePromise({
          url,
          lines: lines.slice(0, 2),
          proc,
          stderr: () => err,
          waitForStderr: (pattern, timeoutMs = 10_000, from = 0) =>
            new Promise((ok, ko) => {
              const deadline = setTimeout(() => ko(new Error(`stderr never matched ${pattern}: ${err}`)), timeoutMs)
              const check = (): void => {
                const match = pattern.exec(err.slice(from))
                if (match) {
                  clearTimeout(deadline)
                  ok(match[0])
                } else waiters.push(check)
              }
              check()
            }),
          stop: async () => {
            proc.kill("SIGTERM")
            return exited.catch(() => null)
          }
        })
      }
    })
  })

export interface RawRequest {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string | Buffer
}

/**
 * One plain HTTP request to an MCP endpoint, for what no SDK client would send (JSON and SSE
 * are accepted as a client would). Fails when no answer came within `timeoutMs`.
 */
export const rawHttp = (
  url: string,
  { method = "POST", headers = {}, body }: RawRequest,
  timeoutMs = 15_000
): Promise<{ status: number; text: string }> =>
  new Promise((resolvePromise, reject) => {
    const req = request(
      url,
      {
        method,
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }
      },
      (res) => {
        let text = ""
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")))
        res.on("end", () => resolvePromise({ status: res.statusCode ?? 0, text }))
      }
    )
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    req.on("error", reject)
    req.end(body)
  })

/** A real MCP SDK client over Streamable HTTP. */
export const connect = async (url: string): Promise<Client> => {
  const client = new Client({ name: "toolkit-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  return client
}

/** The single text block of a tool result. */
export const textOf = (result: unknown): string => {
  const content = (result as { content: Array<{ type: string; text?: string }> }).content
  if (content.length !== 1 || content[0]!.type !== "text")
    throw new Error(`expected one text block: ${JSON.stringify(result)}`)
  return content[0]!.text!
}

/** A Brainfuck program that prints `text` (ASCII). */
export const bfPrinting = (text: string): string => {
  let program = ""
  let current = 0
  for (const ch of text) {
    const code = ch.charCodeAt(0)
    const delta = code - current
    program += delta >= 0 ? "+".repeat(delta) : "-".repeat(-delta)
    program += "."
    current = code
  }
  return program
}

export const HELLO_BF =
  "++++++++[>++++[>++>+++>+++>+<<<<-]>+>+>->>+[<]<-]>>.>---.+++++++..+++.>>.<-.<.+++.------.--------.>>+.>++."

/** Per-thread CPU ticks (utime + stime) of a process, by thread id (Linux /proc). */
export const threadTicks = (pid: number): Map<number, number> => {
  const ticks = new Map<number, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      ticks.set(Number(tid), Number(fields[11]) + Number(fields[12]))
    } catch {
      // the thread ended between readdir and read
    }
  }
  return ticks
}

/** The thread of `pid` that used the most CPU over `ms` (the one running a busy program). */
export const busiestThread = async (pid: number, ms = 600): Promise<{ tid: number; ticks: number }> => {
  const before = threadTicks(pid)
  await new Promise((r) => setTimeout(r, ms))
  const after = threadTicks(pid)
  let best = { tid: -1, ticks: -1 }
  for (const [tid, t] of after) {
    const used = t - (before.get(tid) ?? t)
    if (used > best.ticks) best = { tid, ticks: used }
  }
  return best
}

/**
 * The thread that is the busiest in `windows` windows in a row: an endless loop, rather than a
 * worker still loading its commands, which a loaded machine can make look busiest for one window.
 */
export const spinningThread = async (pid: number, ms = 300, windows = 3, timeoutMs = 20_000): Promise<number> => {
  const deadline = Date.now() + timeoutMs
  let last = -1
  let streak = 0
  while (Date.now() < deadline) {
    const { tid } = await busiestThread(pid, ms)
    streak = tid === last ? streak + 1 : 1
    last = tid
    if (streak >= windows) return tid
  }
  throw new Error(`no thread of ${pid} stayed the busiest for ${windows} windows of ${ms} ms`)
}

/**
 * Waits until no thread of `pid` keeps a core busy (at most a fifth of a 200 ms window), for
 * example until workers that replace terminated ones have started, so that busiestThread then
 * finds the thread of the call under test.
 */
export const waitForQuiet = async (pid: number, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) if ((await busiestThread(pid, 200)).ticks <= 4) return
  throw new Error(`process ${pid} stayed busy for ${timeoutMs} ms`)
}

/** The nice value of one thread of `pid` (Linux /proc, field 19 of stat). */
export const threadNice = (pid: number, tid: number): number => {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16])
}

export const threadAlive = (pid: number, tid: number): boolean => {
  try {
    readFileSync(`/proc/${pid}/task/${tid}/stat`)
    return true
  } catch {
    return false
  }
}

export const waitUntil = async (check: () => boolean, timeoutMs = 5_000): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (check()) return true
    await new Promise((r) => setTimeout(r, 50))
  }
  return check()
}
