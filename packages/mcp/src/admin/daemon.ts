import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { closeSync, openSync } from "node:fs"
import { readdir, readFile, rm } from "node:fs/promises"
import { createConnection, createServer } from "node:net"
import { join } from "node:path"
import { isProcessAlive, parseLoopbackAddress, pollWithin, resolveDataRoot, writeFileAtomic } from "@stoat/core"
import { Effect, Option, Schedule } from "effect"
import { AdminRefused, currentEnvironment, type Environment } from "./install.js"

export const DEFAULT_ADDRESS = "127.0.0.1:7777"

export interface DaemonRecord {
  readonly dir: string
  readonly addr: string
  readonly pid: number
  readonly started: string
  readonly log?: string
}

/** The project directory is the identity: one record per directory, named by a hash of its path. */
const idOf = (dir: string): string => createHash("sha256").update(dir).digest("hex").slice(0, 16)

const mcpDir = (): string => join(resolveDataRoot(), "mcp")

/**
 * Looks at `check` every 100 ms until `until` holds, for at most `withinMs`: the value that met it,
 * or undefined once the time is up (core's pollWithin, on Effect's Clock).
 */
const waitFor = <A>(
  check: () => Promise<A>,
  options: { readonly until: (value: A) => boolean; readonly withinMs: number }
): Promise<A | undefined> =>
  Effect.runPromise(
    Effect.map(
      pollWithin(Effect.promise(check), {
        schedule: Schedule.spaced("100 millis"),
        until: options.until,
        within: options.withinMs
      }),
      Option.getOrUndefined
    )
  )

const answers = (host: string, port: number, timeoutMs = 1000): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = createConnection({ host, port })
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once("connect", () => done(true))
    socket.once("error", () => done(false))
  })

/** Claims the port by listening on it briefly: a bound port fails here, at the prompt. */
const portFree = (host: string, port: number): Promise<string | undefined> =>
  new Promise((resolve) => {
    const probe = createServer()
    probe.once("error", (error: Error) => resolve(error.message))
    probe.listen(port, host, () => probe.close(() => resolve(undefined)))
  })

const readRecord = async (file: string): Promise<DaemonRecord | undefined> => {
  try {
    const record = JSON.parse(await readFile(file, "utf8")) as DaemonRecord
    return typeof record.pid === "number" && typeof record.addr === "string" && typeof record.dir === "string"
      ? record
      : undefined
  } catch {
    return undefined
  }
}

const live = async (record: DaemonRecord): Promise<boolean> => {
  const address = parseLoopbackAddress(record.addr)
  return !("error" in address) && isProcessAlive(record.pid) && (await answers(address.host, address.port))
}

/** Every project's server; records whose server is gone (pid dead or address silent) are dropped. */
export const status = async (): Promise<{ servers: DaemonRecord[] }> => {
  const dir = mcpDir()
  const names = await readdir(dir).catch(() => [] as string[])
  const servers: DaemonRecord[] = []
  for (const name of names.filter((n) => n.endsWith(".json")).sort()) {
    const file = join(dir, name)
    const record = await readRecord(file)
    if (record && (await live(record))) servers.push(record)
    else await rm(file, { force: true })
  }
  return { servers }
}

/**
 * Starts a detached `stoat mcp serve --http` for the current directory and waits until its
 * address answers, so a bound port or a bad address fails here.
 */
export const up = async (
  address: string = DEFAULT_ADDRESS,
  env: Environment = currentEnvironment(),
  waitMs = 30_000
): Promise<DaemonRecord> => {
  const parsed = parseLoopbackAddress(address)
  if ("error" in parsed) throw new AdminRefused(parsed.error)
  const dir = mcpDir()
  const id = idOf(env.cwd)
  const file = join(dir, `${id}.json`)
  const existing = await readRecord(file)
  if (existing && (await live(existing)))
    throw new AdminRefused(
      `a server for ${env.cwd} is already running at ${existing.addr} (pid ${existing.pid}); stop it with stoat mcp down`,
      "invalid_spec"
    )
  const busy = await portFree(parsed.host, parsed.port)
  if (busy !== undefined) throw new AdminRefused(`cannot listen on ${address}: ${busy}`, "invalid_spec")
  const log = join(dir, `${id}.log`)
  await writeFileAtomic(log, "")
  const out = openSync(log, "a")
  const child = spawn(process.execPath, [env.executable, "mcp", "serve", "--http", address], {
    cwd: env.cwd,
    detached: true,
    stdio: ["ignore", out, out],
    env: process.env
  })
  closeSync(out)
  let exited: number | null | undefined
  child.once("exit", (code) => (exited = code))
  child.unref()
  const up = await waitFor(() => answers(parsed.host, parsed.port, 500), {
    until: (answered) => answered || exited !== undefined,
    withinMs: waitMs
  })
  if (up !== true) {
    if (exited === undefined) child.kill("SIGTERM")
    const tail = (await readFile(log, "utf8").catch(() => "")).trim().split("\n").slice(-5).join("\n")
    throw new AdminRefused(`the server did not come up at ${address}${tail ? `:\n${tail}` : ""}`, "internal")
  }
  const record: DaemonRecord = { dir: env.cwd, addr: address, pid: child.pid!, started: new Date().toISOString(), log }
  await writeFileAtomic(file, `${JSON.stringify(record, null, 2)}\n`)
  return record
}

/** Stops the current directory's server and drops its record. */
export const down = async (env: Environment = currentEnvironment(), waitMs = 10_000): Promise<DaemonRecord> => {
  const file = join(mcpDir(), `${idOf(env.cwd)}.json`)
  const record = await readRecord(file)
  if (!record) throw new AdminRefused(`no MCP server runs for ${env.cwd}; see stoat mcp status`, "invalid_spec")
  if (isProcessAlive(record.pid)) {
    process.kill(record.pid, "SIGTERM")
    const gone = await waitFor(async () => !isProcessAlive(record.pid), { until: (ended) => ended, withinMs: waitMs })
    if (gone !== true) process.kill(record.pid, "SIGKILL")
  }
  await rm(file, { force: true })
  return record
}
