import { open } from "node:fs/promises"
import { connect, type Socket } from "node:net"
import { setTimeout as sleep } from "node:timers/promises"

/** Marker the tiny guest prints on its serial console once sshd accepts connections on port 22. */
export const TINY_SSHD_MARKER = "stoat: sshd listening"

/**
 * Waits until 127.0.0.1:port sends an SSH identification line. With user-mode networking the
 * host port accepts immediately even while the guest is still booting, so only the banner
 * proves sshd is up. One connection at a time, spaced out.
 *
 * Attempts are never cut short: a connection opened before the guest has network is held by
 * QEMU's slirp and its SYN retried with back-off (seconds); abandoning it does not cancel it,
 * and it reaches sshd later as a stray connection (dropbear also refuses more than five
 * unauthenticated connections per client address). For the tiny guest, first wait for its
 * console marker (waitForTinyGuestSsh) so that the first attempt already finds the network up.
 */
export async function waitForSshBanner(
  port: number,
  opts: {
    readonly timeoutMs?: number
    readonly intervalMs?: number
    readonly attemptTimeoutMs?: number
    readonly isAlive?: () => boolean
  } = {}
): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  const interval = opts.intervalMs ?? 150
  for (;;) {
    const attempt = opts.attemptTimeoutMs ?? 10_000
    const banner = await readBanner(port, Math.max(100, Math.min(attempt, deadline - Date.now())))
    if (banner !== undefined) return banner
    if (opts.isAlive && !opts.isAlive()) throw new Error(`VM exited before SSH answered on port ${port}`)
    if (Date.now() >= deadline) throw new Error(`no SSH banner on 127.0.0.1:${port} within ${timeoutMs} ms`)
    await sleep(interval)
  }
}

/**
 * Waits for a line matching `pattern` to appear in a console log file after byte `fromOffset`
 * (the log is appended to across boots, so pass its size from before QEMU started).
 * Polls the file; costs the guest nothing.
 */
export async function waitForConsoleLine(
  path: string,
  pattern: RegExp | string,
  opts: { readonly fromOffset?: number; readonly timeoutMs?: number; readonly intervalMs?: number; readonly isAlive?: () => boolean } = {}
): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  let offset = opts.fromOffset ?? 0
  let pending = ""
  for (;;) {
    for (let chunk = await readConsoleFrom(path, offset); chunk.length > 0; chunk = await readConsoleFrom(path, offset)) {
      offset += chunk.length
      pending += chunk.toString("utf8")
      const lines = pending.split("\n")
      pending = lines.pop() ?? ""
      const hit = lines.find((l) => (typeof pattern === "string" ? l.includes(pattern) : pattern.test(l)))
      if (hit !== undefined) return hit.replace(/\r$/, "")
    }
    if (opts.isAlive && !opts.isAlive()) throw new Error(`VM exited before its console showed ${String(pattern)}`)
    if (Date.now() >= deadline) throw new Error(`console ${path} did not show ${String(pattern)} within ${timeoutMs} ms`)
    await sleep(opts.intervalMs ?? 100)
  }
}

/** What a console log holds past `offset` (at most 1 MiB at a time); nothing when it is missing. */
export async function readConsoleFrom(path: string, offset: number): Promise<Buffer> {
  const handle = await open(path, "r").catch(() => undefined)
  if (!handle) return Buffer.alloc(0)
  try {
    const { size } = await handle.stat()
    if (size <= offset) return Buffer.alloc(0)
    const buffer = Buffer.alloc(Math.min(size - offset, 1 << 20))
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

/**
 * Readiness for the tiny guest: its console says sshd listens, then the banner answers.
 * `consoleOffset` is the console log's size before QEMU was started.
 */
export async function waitForTinyGuestSsh(opts: {
  readonly port: number
  readonly consoleLog: string
  readonly consoleOffset: number
  readonly timeoutMs?: number
  readonly isAlive?: () => boolean
}): Promise<string> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000)
  const alive = opts.isAlive === undefined ? {} : { isAlive: opts.isAlive }
  await waitForConsoleLine(opts.consoleLog, TINY_SSHD_MARKER, {
    fromOffset: opts.consoleOffset,
    timeoutMs: Math.max(0, deadline - Date.now()),
    ...alive
  })
  return waitForSshBanner(opts.port, { timeoutMs: Math.max(1_000, deadline - Date.now()), intervalMs: 100, ...alive })
}

function readBanner(port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    let data = ""
    let settled = false
    const sock = connect({ host: "127.0.0.1", port })
    const finish = (v: string | undefined) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      sock.destroy()
      resolve(v)
    }
    const timer = setTimeout(() => finish(undefined), timeoutMs)
    sock.setEncoding("latin1")
    sock.on("data", (chunk: string) => {
      data += chunk
      const nl = data.indexOf("\n")
      if (nl >= 0) finish(data.startsWith("SSH-") ? data.slice(0, nl).trim() : undefined)
    })
    sock.on("error", () => finish(undefined))
    sock.on("close", () => finish(undefined))
  })
}

/**
 * Runs QMP commands over the VM's QMP unix socket: reads the greeting, negotiates
 * capabilities, then sends each command and collects its `return` (events are skipped).
 * QMP serves one client at a time, so the connection is closed as soon as we are done.
 */
export async function qmpCommands(
  socketPath: string,
  commands: ReadonlyArray<{ readonly execute: string; readonly arguments?: Record<string, unknown> }>,
  timeoutMs = 10_000
): Promise<unknown[]> {
  const sock: Socket = connect(socketPath)
  const lines: string[] = []
  const waiters: Array<(l: string) => void> = []
  let buf = ""
  let failure: Error | undefined
  const fail = (e: Error) => {
    failure ??= e
    for (const w of waiters.splice(0)) w("")
  }
  sock.setEncoding("utf8")
  sock.on("data", (chunk: string) => {
    buf += chunk
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl).trim()
      buf = buf.slice(nl + 1)
      if (!line) continue
      const w = waiters.shift()
      if (w) w(line)
      else lines.push(line)
    }
  })
  sock.on("error", (e) => fail(new Error(`QMP ${socketPath}: ${e.message}`)))
  sock.on("close", () => fail(new Error(`QMP ${socketPath}: connection closed`)))
  const timer = setTimeout(() => {
    fail(new Error(`QMP ${socketPath}: no answer within ${timeoutMs} ms`))
    sock.destroy()
  }, timeoutMs)

  const next = async (): Promise<Record<string, unknown>> => {
    const queued = lines.shift()
    if (queued !== undefined) return JSON.parse(queued) as Record<string, unknown>
    if (failure) throw failure
    const l = await new Promise<string>((r) => waiters.push(r))
    if (l === "" && failure) throw failure
    return JSON.parse(l) as Record<string, unknown>
  }
  const reply = async (): Promise<unknown> => {
    for (;;) {
      const msg = await next()
      if ("event" in msg) continue
      if ("error" in msg) throw new Error(`QMP error: ${JSON.stringify(msg["error"])}`)
      return msg["return"]
    }
  }
  try {
    const greeting = await next()
    if (!("QMP" in greeting)) throw new Error(`unexpected QMP greeting: ${JSON.stringify(greeting)}`)
    sock.write(`${JSON.stringify({ execute: "qmp_capabilities" })}\n`)
    await reply()
    const out: unknown[] = []
    for (const c of commands) {
      sock.write(`${JSON.stringify(c)}\n`)
      out.push(await reply())
    }
    return out
  } finally {
    clearTimeout(timer)
    sock.destroy()
  }
}
