import { randomBytes } from "node:crypto"
import { readFile as readLocalFile, rename, rm } from "node:fs/promises"
import { constants as osConstants } from "node:os"
import type { Client, ClientChannel, OpenMode, SFTPWrapper, Stats } from "ssh2"
import { type Context, Data, Deferred, Duration, Effect, Layer, Option, RcMap, Schedule, type Scope, SynchronizedRef } from "effect"
import { AccessDenied, CannotReach, CapabilityUnavailable, Internal, NotFound, Usage } from "../errors.js"
import { GuestTransport, type ExecOptions, type ExecOutput, type SftpError, type SshTarget } from "../ports/guest-transport.js"
import { makeSshProbe } from "./probe.js"
import { guestCommand } from "./quote.js"

type Ssh2 = typeof import("ssh2")
type Transport = Context.Tag.Service<GuestTransport>

export interface GuestTransportOptions {
  /** ssh handshake + auth deadline. */
  readonly readyTimeoutMs?: number
  /** ssh-level keepalive, so a vanished guest fails pooled calls instead of hanging them. */
  readonly keepaliveIntervalMs?: number
  /** Concurrent exec channels per connection (OpenSSH's MaxSessions is 10; one is kept for SFTP). */
  readonly maxChannelsPerConnection?: number
  /** Per-stream cap when the caller sets none: a runaway command must not exhaust host memory. */
  readonly defaultMaxOutputBytes?: number
  /** How long a killed channel may take to confirm its close before exec returns anyway. */
  readonly killGraceMs?: number
  /** A VM's pooled connection is closed after this long without a call. */
  readonly idleTimeoutMs?: number
}

const DEFAULTS = {
  readyTimeoutMs: 10_000,
  keepaliveIntervalMs: 15_000,
  maxChannelsPerConnection: 8,
  defaultMaxOutputBytes: 64 * 1024 * 1024,
  killGraceMs: 1_000,
  idleTimeoutMs: 5 * 60_000
}

/** Exit code when the guest sent no exit status (as OpenSSH's client reports). */
const NO_EXIT_STATUS = 255
const READ_CHUNK = 64 * 1024
/**
 * Whole-file copies: 64 KiB SFTP requests (OpenSSH's sftp-server takes up to 256 KiB), 64 in
 * flight. Twice ssh2's default request size halves the per-request work of a slow guest.
 */
const BULK = { chunkSize: 64 * 1024, concurrency: 64 }

// SFTP status codes (RFC draft-ietf-secsh-filexfer-02 §7).
const SFTP_NO_SUCH_FILE = 2
const SFTP_PERMISSION_DENIED = 3

/** One ssh connection of a VM's line. */
interface Conn {
  readonly client: Client
  /** False once the connection failed, closed or was dropped: the line dials anew. */
  alive: boolean
  sftp: Promise<SFTPWrapper> | undefined
  readonly channels: Effect.Semaphore
}

/** The pool key: one line per VM target, compared by value (`Data.struct`). */
type LineKey = SshTarget
const lineKey = (target: SshTarget): LineKey => Data.struct({ vm: target.vm, port: target.port, user: target.user, privateKeyPath: target.privateKeyPath })

/** A VM's line: its current connection, dialled on demand and redialled once it has died. */
interface Line {
  /** The live connection; callers arriving while one is dialled share that dial and its outcome. */
  readonly connect: Effect.Effect<Conn, CannotReach>
  /** Closes the established connection (calls on it fail as lost); the next call dials anew. */
  readonly drop: Effect.Effect<void>
}

const closeConn = (conn: Conn) => {
  conn.alive = false
  conn.client.end()
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const unreachable = (target: SshTarget, cause?: unknown) =>
  new CannotReach({
    message: `ssh could not connect to VM ${target.vm} on port ${target.port}; call wait first${cause === undefined ? "" : ` (${describe(cause)})`}`,
    subject: target.vm
  })

const lost = (target: SshTarget) =>
  new CannotReach({ message: `ssh connection to VM ${target.vm} on port ${target.port} was lost during the call`, subject: target.vm })

/** ssh2 throws this synchronously when asked to open a channel on a closed socket. */
const isNotConnected = (cause: unknown) => cause instanceof Error && cause.message === "Not connected"

const signalExitCode = (signal: unknown): number => {
  const name = typeof signal === "string" ? (signal.startsWith("SIG") ? signal : `SIG${signal}`) : ""
  const number = (osConstants.signals as Record<string, number | undefined>)[name]
  return number === undefined ? NO_EXIT_STATUS : 128 + number
}

/**
 * ssh2's `channel.signal()` is a no-op once our side sent EOF (it checks `writable`), yet a
 * signal request is still valid on an open channel: send it through the protocol directly.
 */
const sendKill = (channel: ClientChannel) => {
  const internals = channel as unknown as {
    outgoing?: { id: number; state: string }
    _client?: { _protocol?: { signal: (id: number, name: string) => void } }
  }
  try {
    const out = internals.outgoing
    if (out && (out.state === "open" || out.state === "eof")) internals._client?._protocol?.signal(out.id, "KILL")
  } catch {
    // The connection is already gone; closing is all that is left.
  }
}

/** KILL, then close our side: nothing of the command is left attached to us. */
const killChannel = (channel: ClientChannel) => {
  sendKill(channel)
  channel.close()
}

/** Output kept up to a cap; the rest is dropped and remembered as truncation. */
class Capped {
  private readonly chunks: Array<Buffer> = []
  private size = 0
  truncated = false
  constructor(private readonly cap: number) {}
  push(chunk: Buffer) {
    const room = this.cap - this.size
    if (chunk.length > room) this.truncated = true
    if (room <= 0) return
    const kept = Buffer.from(chunk.subarray(0, Math.min(room, chunk.length)))
    this.chunks.push(kept)
    this.size += kept.length
  }
  bytes(): Uint8Array {
    return Buffer.concat(this.chunks, this.size)
  }
}

/**
 * The guest has no SFTP server: sshd refused the subsystem (OpenSSH without one configured), or
 * started it and it ended before the version exchange (dropbear whose sftp-server is missing).
 */
class SftpUnavailable extends Error {}
const isSftpRefusal = (cause: unknown) =>
  cause instanceof Error && /^Unable to start subsystem: sftp|while establishing SFTP session|unexpected SFTP session termination/.test(cause.message)

const sftpFailure = (target: SshTarget, conn: Conn, path: string, cause: unknown) => {
  if (cause instanceof SftpUnavailable)
    return new CapabilityUnavailable({ reason: "sftp", message: `VM ${target.vm} has no SFTP server (${cause.message})`, subject: target.vm })
  const code = (cause as { code?: unknown } | null)?.code
  if (code === SFTP_NO_SUCH_FILE || code === "ENOENT" || code === "ENOTDIR")
    return new NotFound({ message: `no such file or directory: ${path} (VM ${target.vm})`, subject: path })
  if (code === "EISDIR") return new Usage({ message: `${path} is a directory (VM ${target.vm}); list it with list_dir`, subject: path })
  if (code === SFTP_PERMISSION_DENIED || code === "EACCES" || code === "EPERM")
    return new AccessDenied({ message: `permission denied: ${path} (VM ${target.vm}, user ${target.user})`, subject: path })
  if (!conn.alive) return lost(target)
  return new Internal({ message: `sftp on VM ${target.vm} failed for ${path}: ${describe(cause)}`, subject: path })
}

/** The server answered an exec request with failure: no command started on the guest. */
class ExecRefused {
  constructor(readonly cause: unknown) {}
}
const isExecRefused = (cause: unknown) => cause instanceof Error && cause.message === "Unable to exec"
const EXEC_REFUSED_RETRIES = Schedule.intersect(Schedule.exponential("100 millis"), Schedule.recurs(4))

/** Node-style callback → Promise, for the few SFTP calls used. */
const call = <A>(register: (done: (err: Error | undefined | null, value: A) => void) => void) =>
  new Promise<A>((resolve, reject) => {
    try {
      register((err, value) => (err ? reject(err) : resolve(value)))
    } catch (error) {
      reject(error)
    }
  })

export const makeGuestTransport = (
  options: GuestTransportOptions = {}
): Effect.Effect<Transport, never, Scope.Scope> =>
  Effect.gen(function* () {
    const config = { ...DEFAULTS, ...options }
    // ssh2 is heavy: loaded only when the live transport is built.
    const ssh2: Ssh2 = yield* Effect.promise(async () => {
      const mod = (await import("ssh2")) as Ssh2 & { default?: Ssh2 }
      return mod.default ?? mod
    })

    /** Dials one connection: resolved on `ready`, failed on any error before it, ended if interrupted. */
    const dial = (target: SshTarget): Effect.Effect<Conn, CannotReach> =>
      Effect.flatMap(Effect.makeSemaphore(config.maxChannelsPerConnection), (channels) =>
        Effect.async<Conn, CannotReach>((resume) => {
          const client = new ssh2.Client()
          const conn: Conn = { client, alive: true, sftp: undefined, channels }
          let settled = false
          const settle = (outcome: Effect.Effect<Conn, CannotReach>) => {
            if (settled) return
            settled = true
            resume(outcome)
          }
          const failed = (cause: unknown) => {
            conn.alive = false
            settle(Effect.fail(unreachable(target, cause)))
          }
          client.on("ready", () => {
            // Small request/response packets: Nagle would add ~40 ms to every exec.
            client.setNoDelay(true)
            settle(Effect.succeed(conn))
          })
          client.on("error", failed)
          client.on("close", () => failed(new Error("connection closed")))
          readLocalFile(target.privateKeyPath).then(
            (privateKey) => {
              if (settled) return
              try {
                client.connect({
                  host: "127.0.0.1",
                  port: target.port,
                  username: target.user,
                  privateKey,
                  readyTimeout: config.readyTimeoutMs,
                  keepaliveInterval: config.keepaliveIntervalMs,
                  keepaliveCountMax: 3,
                  // Local VMs with fresh host keys, as the original's StrictHostKeyChecking=no.
                  hostVerifier: () => true,
                  // ChaCha20-Poly1305 first, as OpenSSH's client orders it: a guest without AES
                  // instructions (any guest under TCG) moves data far faster than with AES-CTR + HMAC.
                  // (ssh2 skips a prepend already in its list: taken out, then put first.)
                  algorithms: { cipher: { remove: ["chacha20-poly1305@openssh.com"], prepend: ["chacha20-poly1305@openssh.com"], append: [] } }
                })
              } catch (error) {
                failed(error)
              }
            },
            (error: Error) => failed(new Error(`cannot read ssh key ${target.privateKeyPath}: ${error.message}`))
          )
          return Effect.sync(() => {
            settled = true
            closeConn(conn)
          })
        })
      )

    /**
     * A line lives in its pool entry's scope: the dial runs in that scope (a caller interrupted
     * while waiting does not abandon a half-open connection), and closing the scope (idle, or the
     * transport's end) closes the connection. A dead connection is replaced inside its line, not
     * by `RcMap.invalidate`: in effect 3.22 an entry invalidated while still referenced removes,
     * once finally released, whichever newer entry then holds its key from the map.
     */
    const makeLine = (key: LineKey): Effect.Effect<Line, never, Scope.Scope> =>
      Effect.gen(function* () {
        const scope = yield* Effect.scope
        const current = yield* SynchronizedRef.make(Option.none<Deferred.Deferred<Conn, CannotReach>>())
        /** The established connection of a finished dial, if any. */
        const established = (attempt: Deferred.Deferred<Conn, CannotReach>) =>
          Effect.flatMap(Deferred.poll(attempt), (done) => (Option.isNone(done) ? Effect.succeed(Option.none<Conn>()) : Effect.option(done.value)))
        const connect = SynchronizedRef.modifyEffect(current, (held) =>
          Effect.gen(function* () {
            if (Option.isSome(held)) {
              const done = yield* Deferred.poll(held.value)
              if (Option.isNone(done)) return [held.value, held] as const
              const conn = yield* established(held.value)
              if (Option.isSome(conn) && conn.value.alive) return [held.value, held] as const
              if (Option.isSome(conn)) closeConn(conn.value)
            }
            const attempt = yield* Deferred.make<Conn, CannotReach>()
            yield* Effect.forkIn(Effect.intoDeferred(dial(key), attempt), scope)
            return [attempt, Option.some(attempt)] as const
          })
        ).pipe(Effect.flatMap(Deferred.await))
        const drop = Effect.flatMap(SynchronizedRef.get(current), (held) =>
          Option.isNone(held) ? Effect.void : Effect.map(established(held.value), Option.map(closeConn))
        )
        yield* Effect.addFinalizer(() => drop)
        return { connect, drop }
      })

    const lines = yield* RcMap.make({ lookup: makeLine, idleTimeToLive: Duration.millis(config.idleTimeoutMs) })

    /** Runs `use` with the target's line held, so it is not closed as idle meanwhile. */
    const withLine = <A, E>(target: SshTarget, use: (line: Line) => Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.scoped(Effect.flatMap(RcMap.get(lines, lineKey(target)), use))

    const connection = (target: SshTarget): Effect.Effect<Conn, CannotReach> => withLine(target, (line) => line.connect)

    /**
     * Runs `use` on the VM's pooled connection. A pooled connection can die between calls (guest
     * rebooted, sshd restarted) before we notice: `use` fails with `Retry` when it found the
     * connection dead before having any effect on the guest; that connection is dropped and `use`
     * runs once more on a fresh one.
     */
    const onConnection = <A, E>(target: SshTarget, use: (conn: Conn) => Effect.Effect<A, E>): Effect.Effect<A, Exclude<E, Retry> | CannotReach> =>
      withLine(target, (line) =>
        Effect.flatMap(line.connect, (conn) => Effect.tapError(use(conn), (error) => Effect.sync(() => error instanceof Retry && closeConn(conn))))
      ).pipe(
        Effect.retry({ times: 1, while: (error) => error instanceof Retry }),
        Effect.catchIf(
          (error): error is Extract<typeof error, Retry> => error instanceof Retry,
          (error) => Effect.fail(unreachable(target, error.cause))
        )
      ) as Effect.Effect<A, Exclude<E, Retry> | CannotReach>

    /** `Retry` when the connection is gone, else the mapped error. */
    const deadOr = <E>(conn: Conn, cause: unknown, otherwise: () => E): E | Retry =>
      !conn.alive || isNotConnected(cause) ? new Retry(cause) : otherwise()

    /** The connection's SFTP session, opened once and shared by all file operations on it. */
    const sftpSession = (conn: Conn): Promise<SFTPWrapper> => {
      if (conn.sftp === undefined) {
        const session = call<SFTPWrapper>((done) => conn.client.sftp(done)).catch((cause: unknown) => {
          throw conn.alive && isSftpRefusal(cause) ? new SftpUnavailable(describe(cause)) : cause
        })
        conn.sftp = session
        const drop = () => {
          if (conn.sftp === session) conn.sftp = undefined
        }
        // A guest without SFTP stays without it for this connection: its callers fall back at once.
        session.then((sftp) => sftp.on("close", drop).on("error", drop), (cause: unknown) => cause instanceof SftpUnavailable || drop())
      }
      return conn.sftp
    }

    const withHandle = <A>(
      target: SshTarget,
      path: string,
      flags: OpenMode,
      attrs: { mode?: number },
      use: (sftp: SFTPWrapper, handle: Buffer) => Promise<A>
    ): Effect.Effect<A, SftpError> =>
      Effect.gen(function* () {
        // Connect first, interruptibly; the handle is then opened uninterruptibly so it is always closed.
        yield* connection(target)
        return yield* Effect.scoped(
          Effect.gen(function* () {
            const { conn, sftp, handle } = yield* Effect.acquireRelease(
              onConnection(target, (conn) =>
                Effect.tryPromise({
                  try: async () => {
                    const sftp = await sftpSession(conn)
                    const handle = await call<Buffer>((done) => sftp.open(path, flags, attrs, done))
                    return { conn, sftp, handle }
                  },
                  catch: (cause) => deadOr(conn, cause, () => sftpFailure(target, conn, path, cause))
                })
              ),
              ({ sftp, handle }) => Effect.promise(() => call<void>((done) => sftp.close(handle, (err) => done(err, undefined))).catch(() => undefined))
            )
            return yield* Effect.tryPromise({ try: () => use(sftp, handle), catch: (cause) => sftpFailure(target, conn, path, cause) })
          })
        )
      })

    /** Whole-file copies are idempotent, so a copy that found the connection dead is simply redone. */
    const transfer = (target: SshTarget, localPath: string, remotePath: string, copy: (sftp: SFTPWrapper, signal: AbortSignal) => Promise<void>) =>
      onConnection(target, (conn) =>
        Effect.tryPromise({
          try: async (signal) => copy(await sftpSession(conn), signal),
          catch: (cause) => {
            // Local failures carry errno strings, SFTP ones numeric status codes.
            const local = typeof (cause as { code?: unknown } | null)?.code === "string"
            return local ? sftpFailure(target, conn, localPath, cause) : deadOr(conn, cause, () => sftpFailure(target, conn, remotePath, cause))
          }
        })
      )

    const readChunk = (sftp: SFTPWrapper, handle: Buffer, position: number, length: number) =>
      new Promise<Buffer>((resolve, reject) => {
        const buffer = Buffer.alloc(length)
        try {
          sftp.read(handle, buffer, 0, length, position, (err, bytesRead) => (err ? reject(err) : resolve(buffer.subarray(0, bytesRead))))
        } catch (error) {
          reject(error)
        }
      })

    const exec = (target: SshTarget, argv: ReadonlyArray<string>, execOptions: ExecOptions = {}): Effect.Effect<ExecOutput, CannotReach> =>
      Effect.gen(function* () {
        const commandOptions = {
          ...(execOptions.cwd !== undefined ? { cwd: execOptions.cwd } : {}),
          ...(execOptions.env !== undefined ? { env: execOptions.env } : {})
        }
        const command = yield* Effect.try({ try: () => guestCommand(argv, commandOptions), catch: (e) => e }).pipe(Effect.orDie)
        return yield* onConnection(target, (conn) =>
          conn.channels.withPermits(1)(
            Effect.scoped(Effect.gen(function* () {
              const channel = yield* Effect.acquireRelease(
                Effect.tryPromise({
                  try: () => call<ClientChannel>((done) => conn.client.exec(command, done)),
                  catch: (cause) => (isExecRefused(cause) && conn.alive ? new ExecRefused(cause) : deadOr(conn, cause, () => unreachable(target, cause)))
                }).pipe(
                  // sshd may refuse a new exec for a moment while it tears down a killed one (dropbear
                  // right after a cancelled command): nothing ran, so asking again is safe.
                  Effect.retry({ schedule: EXEC_REFUSED_RETRIES, while: (error) => error instanceof ExecRefused }),
                  Effect.catchIf((error): error is ExecRefused => error instanceof ExecRefused, (error) => unreachable(target, error.cause))
                ),
                // Interrupted or finished: a still-open channel is killed, never left running.
                (channel) => Effect.sync(() => killChannel(channel))
              )
              return yield* runChannel(target, conn, channel, execOptions)
            }))
          )
        )
      })

    const runChannel = (target: SshTarget, conn: Conn, channel: ClientChannel, options: ExecOptions) =>
      Effect.async<ExecOutput, CannotReach>((resume) => {
        const cap = options.maxOutputBytes ?? config.defaultMaxOutputBytes
        const stdout = new Capped(cap)
        const stderr = new Capped(cap)
        let exitCode: number | undefined
        let timedOut = false
        let finished = false
        let timer: NodeJS.Timeout | undefined
        let grace: NodeJS.Timeout | undefined

        const stop = () => {
          finished = true
          clearTimeout(timer)
          clearTimeout(grace)
        }
        const result = (): ExecOutput => ({
          // Killed on timeout without the guest confirming: report it as the KILL it was.
          exitCode: exitCode ?? (timedOut ? 128 + osConstants.signals.SIGKILL : NO_EXIT_STATUS),
          stdout: stdout.bytes(),
          stderr: stderr.bytes(),
          timedOut,
          truncated: stdout.truncated || stderr.truncated
        })
        const finish = (outcome: Effect.Effect<ExecOutput, CannotReach>) => {
          if (finished) return
          stop()
          resume(outcome)
        }
        const deliver = (sink: ((chunk: Uint8Array) => void) | undefined, chunk: Buffer) => {
          if (sink === undefined) return
          try {
            sink(chunk)
          } catch (error) {
            // A throwing callback must not become an uncaught exception in an event handler.
            killChannel(channel)
            finish(Effect.die(error))
          }
        }

        channel.on("data", (chunk: Buffer) => {
          stdout.push(chunk)
          deliver(options.onStdout, chunk)
        })
        channel.stderr.on("data", (chunk: Buffer) => {
          stderr.push(chunk)
          deliver(options.onStderr, chunk)
        })
        // Without a listener a stream error would crash the process; the `close` that follows decides the outcome.
        channel.on("error", () => undefined)
        channel.stderr.on("error", () => undefined)
        channel.on("exit", (code: number | null, signal?: string) => {
          exitCode = code ?? signalExitCode(signal)
        })
        channel.on("close", () => {
          const done = () => {
            if (!timedOut && exitCode === undefined && !conn.alive) finish(Effect.fail(lost(target)))
            else finish(Effect.succeed(result()))
          }
          // `close` follows stdout's end; stderr may still hold its last chunk.
          if (channel.stderr.readableEnded || channel.stderr.destroyed) done()
          else channel.stderr.once("end", done).once("close", done)
        })

        if (options.timeoutMs !== undefined) {
          timer = setTimeout(() => {
            timedOut = true
            // KILL first and let the guest report the exit and close; a guest that ignores the
            // signal or hangs gets the channel closed under it and the partial output is returned.
            sendKill(channel)
            grace = setTimeout(() => {
              channel.close()
              finish(Effect.succeed(result()))
            }, config.killGraceMs)
          }, Math.max(0, options.timeoutMs))
        }

        // stdin, then EOF: a command reading stdin must not wait for more.
        if (options.stdin === undefined) channel.end()
        else channel.end(typeof options.stdin === "string" ? Buffer.from(options.stdin, "utf8") : Buffer.from(options.stdin))

        return Effect.sync(() => {
          stop()
          killChannel(channel)
        })
      })

    const readFile: Transport["readFile"] = (target, path, readOptions = {}) =>
      withHandle(target, path, "r", {}, async (sftp, handle) => {
        const stats = await call<Stats>((done) => sftp.fstat(handle, done))
        if (stats.isDirectory()) throw Object.assign(new Error("is a directory"), { code: "EISDIR" })
        const offset = Math.max(0, readOptions.offset ?? 0)
        const limit = readOptions.maxBytes ?? Number.POSITIVE_INFINITY
        const chunks: Array<Buffer> = []
        let got = 0
        let eof = false
        // Read to EOF rather than to the stat size: /proc-like files report size 0.
        while (got < limit) {
          const chunk = await readChunk(sftp, handle, offset + got, Math.min(READ_CHUNK, limit - got))
          if (chunk.length === 0) {
            eof = true
            break
          }
          chunks.push(chunk)
          got += chunk.length
        }
        const size = eof && got > 0 ? Math.max(stats.size, offset + got) : stats.size
        return { data: Buffer.concat(chunks, got) as Uint8Array, size }
      })

    const writeFile: Transport["writeFile"] = (target, path, data, writeOptions = {}) =>
      withHandle(target, path, writeOptions.append ? "a" : "w", writeOptions.mode === undefined ? {} : { mode: writeOptions.mode }, async (sftp, handle) => {
        // O_APPEND already appends; writing at the current size also covers servers that honour offsets.
        let position = writeOptions.append ? (await call<Stats>((done) => sftp.fstat(handle, done))).size : 0
        const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
        for (let at = 0; at < buffer.length; ) {
          const length = Math.min(READ_CHUNK * 4, buffer.length - at)
          await call<void>((done) => sftp.write(handle, buffer, at, length, position, (err) => done(err, undefined)))
          at += length
          position += length
        }
        // The open mode only applies to a new file and is umasked; set it exactly, like `chmod` after `tee`.
        if (writeOptions.mode !== undefined) {
          const mode = writeOptions.mode
          await call<void>((done) => sftp.fchmod(handle, mode, (err) => done(err, undefined)))
        }
      })

    const upload: Transport["upload"] = (target, localPath, remotePath) =>
      transfer(target, localPath, remotePath, (sftp) => call<void>((done) => sftp.fastPut(localPath, remotePath, BULK, (err) => done(err, undefined))))

    const download: Transport["download"] = (target, remotePath, localPath) =>
      transfer(target, localPath, remotePath, async (sftp, signal) => {
        // Into a temp file first: a failed or interrupted copy never leaves a partial file at localPath.
        const part = `${localPath}.part-${randomBytes(4).toString("hex")}`
        try {
          await call<void>((done) => sftp.fastGet(remotePath, part, BULK, (err) => done(err, undefined)))
          if (signal.aborted) throw new Error("download interrupted")
          await rename(part, localPath)
        } finally {
          await rm(part, { force: true })
        }
      })

    const probe = yield* makeSshProbe()

    const release: Transport["release"] = (vm) =>
      Effect.flatMap(RcMap.keys(lines), (keys) =>
        Effect.forEach(
          keys.filter((key) => vm === undefined || key.vm === vm),
          (key) => withLine(key, (line) => line.drop),
          { discard: true }
        )
      )

    return { exec, readFile, writeFile, upload, download, probe, release }
  })

/** Raised inside `onConnection` when a channel could not be opened; decides whether to reconnect. */
class Retry {
  constructor(readonly cause: unknown) {}
}

/** The live guest transport over ssh2; pooled connections close when the layer's scope does. */
export const GuestTransportLive: Layer.Layer<GuestTransport> = Layer.scoped(GuestTransport, makeGuestTransport())

export const guestTransportLayer = (options: GuestTransportOptions): Layer.Layer<GuestTransport> =>
  Layer.scoped(GuestTransport, makeGuestTransport(options))
