import { randomBytes } from "node:crypto"
import { readFile as readLocalFile, rename, rm } from "node:fs/promises"
import { constants as osConstants } from "node:os"
import type { Client, ClientChannel, OpenMode, SFTPWrapper, Stats } from "ssh2"
import { type Context, Data, Deferred, Duration, Effect, FiberId, Layer, RcMap, Schedule, type Scope } from "effect"
import { AccessDenied, CannotReach, CapabilityUnavailable, Internal, NotFound, waitForSsh, Usage } from "../errors.js"
import {
  GuestTransport,
  type ExecOptions,
  type ExecOutput,
  type SftpError,
  type SshTarget
} from "../ports/guest-transport.js"
import { jumpName, openJump } from "./jump.js"
import { makeSshProbe } from "./probe.js"
import { guestCommand } from "./quote.js"

type Ssh2 = typeof import("ssh2")
type Transport = Context.Tag.Service<GuestTransport>

export interface GuestTransportOptions {
  /** ssh handshake + auth deadline. */
  readonly readyTimeoutMs?: number
  /** ssh-level keepalive, so a vanished guest fails pooled calls instead of hanging them. */
  readonly keepaliveIntervalMs?: number
  /** Connections per VM, so commands at once per VM: each connection carries one command at a time. */
  readonly maxConnectionsPerVm?: number
  /** Per-stream cap when the caller sets none: a runaway command must not exhaust host memory. */
  readonly defaultMaxOutputBytes?: number
  /** How long a command may take to end after TERM before it gets KILL, and after KILL before its connection is closed. */
  readonly killGraceMs?: number
  /** A VM's pooled connection is closed after this long without a call. */
  readonly idleTimeoutMs?: number
}

const DEFAULTS = {
  // A TCG guest on a host with both cores busy takes seconds for a key exchange.
  readyTimeoutMs: 20_000,
  keepaliveIntervalMs: 15_000,
  maxConnectionsPerVm: 6,
  defaultMaxOutputBytes: 64 * 1024 * 1024,
  killGraceMs: 3_000,
  idleTimeoutMs: 5 * 60_000
}

/** Exit code for a signal this host has no number for (as OpenSSH's client reports it). */
const UNKNOWN_SIGNAL_EXIT = 255
const READ_CHUNK = 64 * 1024
/**
 * Whole-file copies: 64 KiB SFTP requests (OpenSSH's sftp-server takes up to 256 KiB), 64 in
 * flight. Twice ssh2's default request size halves the per-request work of a slow guest.
 */
const BULK = { chunkSize: 64 * 1024, concurrency: 64 }

// SFTP status codes (RFC draft-ietf-secsh-filexfer-02 §7).
const SFTP_NO_SUCH_FILE = 2
const SFTP_PERMISSION_DENIED = 3

/**
 * One ssh connection of a VM's line. It carries one command at a time (`busy`): dropbear up to
 * 2024.86 closes a session channel whose exec request it has not read yet whenever another child
 * of the same connection exits meanwhile, and then may run that command on the closed channel and
 * abort the whole connection when it writes output (upstream fix 71521d1b, "Don't close channels
 * when a PID hasn't started"). Debian 12's dropbear 2022.83 has the bug; OpenSSH's client, one
 * command per connection, never meets it.
 */
interface Conn {
  readonly client: Client
  /** False once the connection failed, closed or was dropped: the line dials anew. */
  alive: boolean
  /** A call holds it: no other channel may be opened on it meanwhile. */
  busy: boolean
  sftp: Promise<SFTPWrapper> | undefined
}

/** The pool key: one line per VM target, jump host included, compared by value (`Data.struct`). */
type LineKey = SshTarget
const lineKey = (target: SshTarget): LineKey =>
  Data.struct({
    vm: target.vm,
    port: target.port,
    user: target.user,
    privateKeyPath: target.privateKeyPath,
    ...(target.jump !== undefined ? { jump: Data.struct({ ...target.jump }) } : {})
  })

/** A VM's line: its connections, each used by one call at a time, dialled on demand and redialled once dead. */
interface Line {
  /** Runs `use` on a live connection that no other call uses meanwhile: an idle one, else one dialled for it. */
  readonly use: <A, E>(use: (conn: Conn) => Effect.Effect<A, E>) => Effect.Effect<A, E | CannotReach>
  /** Closes every established connection (calls on them fail as lost); the next call dials anew. */
  readonly drop: Effect.Effect<void>
}

const closeConn = (conn: Conn) => {
  conn.alive = false
  conn.client.end()
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** `port 2200`, or `port 2200 of host root@box` for a VM reached through its host. */
const where = (target: SshTarget) =>
  `port ${target.port}${target.jump !== undefined ? ` of host ${jumpName(target.jump)}` : ""}`

const unreachable = (target: SshTarget, cause?: unknown) =>
  new CannotReach({
    message: `ssh could not connect to VM ${target.vm} on ${where(target)}${cause === undefined ? "" : ` (${describe(cause)})`}`,
    subject: target.vm,
    hint: waitForSsh(target.vm)
  })

const lost = (target: SshTarget) =>
  new CannotReach({
    message: `ssh connection to VM ${target.vm} on ${where(target)} was lost during the call`,
    subject: target.vm
  })

const refused = (target: SshTarget) =>
  new CannotReach({
    message: `sshd of VM ${target.vm} refused to start the command (${where(target)})`,
    subject: target.vm
  })

const withoutStatus = (target: SshTarget) =>
  new CannotReach({
    message: `sshd of VM ${target.vm} closed the command's channel without its exit status; whether the command finished is unknown`,
    subject: target.vm
  })

/** The guest's sshd closed the channel (it does so only once the command has exited), or the connection is gone. */
const serverClosed = (channel: ClientChannel) =>
  (channel as unknown as { incoming: { state: string } }).incoming.state === "closed"

/** True once the channel is closed by the guest, false if it is not within `ms`. */
const closedWithin = (channel: ClientChannel, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (serverClosed(channel)) return resolve(true)
    const onClose = () => {
      clearTimeout(timer)
      resolve(true)
    }
    const timer = setTimeout(() => {
      channel.off("close", onClose)
      resolve(serverClosed(channel))
    }, ms)
    channel.once("close", onClose)
  })

/** A command's channel, and its exit status once the guest reported it. */
interface Started {
  readonly channel: ClientChannel
  exitCode: number | undefined
}

/**
 * Opens a session channel and starts `command` on it. ssh2 emits `exit` the moment it parses the
 * status, which under load arrives in the same read as the exec's success reply, before any
 * continuation of ours runs: the listener is attached in ssh2's own callback, or the status is lost.
 */
const startCommand = (conn: Conn, command: string) =>
  call<Started>((done) =>
    conn.client.exec(command, (err, channel) => {
      if (err) return done(err, undefined as never)
      const started: Started = { channel, exitCode: undefined }
      channel.on("exit", (code: number | null, signal?: string) => {
        started.exitCode = code ?? signalExitCode(signal)
      })
      // Without a listener a stream error would crash the process; the `close` that follows decides the outcome.
      channel.on("error", () => undefined)
      channel.stderr.on("error", () => undefined)
      done(undefined, started)
    })
  )

/** ssh2 throws this synchronously when asked to open a channel on a closed socket. */
const isNotConnected = (cause: unknown) => cause instanceof Error && cause.message === "Not connected"

const signalExitCode = (signal: unknown): number => {
  const name = typeof signal === "string" ? (signal.startsWith("SIG") ? signal : `SIG${signal}`) : ""
  const number = (osConstants.signals as Record<string, number | undefined>)[name]
  return number === undefined ? UNKNOWN_SIGNAL_EXIT : 128 + number
}

/**
 * ssh2's `channel.signal()` is a no-op once our side sent EOF (it checks `writable`), yet a
 * signal request is still valid on an open channel: send it through the protocol directly.
 */
const sendSignal = (channel: ClientChannel, name: "TERM" | "KILL") => {
  const internals = channel as unknown as {
    outgoing?: { id: number; state: string }
    _client?: { _protocol?: { signal: (id: number, name: string) => void } }
  }
  try {
    const out = internals.outgoing
    if (out && (out.state === "open" || out.state === "eof")) internals._client?._protocol?.signal(out.id, name)
  } catch {
    // The connection is already gone; closing is all that is left.
  }
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
  cause instanceof Error &&
  /^Unable to start subsystem: sftp|while establishing SFTP session|unexpected SFTP session termination/.test(
    cause.message
  )

const sftpFailure = (target: SshTarget, conn: Conn, path: string, cause: unknown) => {
  if (cause instanceof SftpUnavailable)
    return new CapabilityUnavailable({
      reason: "sftp",
      message: `VM ${target.vm} has no SFTP server (${cause.message})`,
      subject: target.vm
    })
  const code = (cause as { code?: unknown } | null)?.code
  if (code === SFTP_NO_SUCH_FILE || code === "ENOENT" || code === "ENOTDIR")
    return new NotFound({ message: `no such file or directory: ${path} (VM ${target.vm})`, subject: path })
  if (code === "EISDIR")
    return new Usage({ message: `${path} is a directory (VM ${target.vm}); list it with list_dir`, subject: path })
  if (code === SFTP_PERMISSION_DENIED || code === "EACCES" || code === "EPERM")
    return new AccessDenied({
      message: `permission denied: ${path} (VM ${target.vm}, user ${target.user})`,
      subject: path
    })
  if (!conn.alive) return lost(target)
  return new Internal({ message: `sftp on VM ${target.vm} failed for ${path}: ${describe(cause)}`, subject: path })
}

/** ssh2's error when sshd answered the exec request with failure, or closed the channel before answering. */
const isExecRefused = (cause: unknown) => cause instanceof Error && cause.message === "Unable to exec"

/** A call that found its connection dead before it had any effect on the guest runs once more, on a fresh connection. */
const ON_FRESH_CONNECTION = Schedule.recurs(1)

/** Node-style callback → Promise, for the few SFTP calls used. */
const call = <A>(register: (done: (err: Error | undefined | null, value: A) => void) => void) =>
  new Promise<A>((resolve, reject) => {
    try {
      register((err, value) => (err ? reject(err) : resolve(value)))
    } catch (error) {
      reject(error)
    }
  })

export const makeGuestTransport = (options: GuestTransportOptions = {}): Effect.Effect<Transport, never, Scope.Scope> =>
  Effect.gen(function* () {
    const config = { ...DEFAULTS, ...options }
    // ssh2 is heavy: loaded only when the live transport is built.
    const ssh2: Ssh2 = yield* Effect.promise(async () => {
      const mod = (await import("ssh2")) as Ssh2 & { default?: Ssh2 }
      return mod.default ?? mod
    })

    /** Dials one connection: resolved on `ready`, failed on any error before it, ended if interrupted. */
    const dial = (target: SshTarget): Effect.Effect<Conn, CannotReach> =>
      Effect.async<Conn, CannotReach>((resume) => {
        const client = new ssh2.Client()
        const conn: Conn = { client, alive: true, busy: false, sftp: undefined }
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
                // A VM on another host: its forwarded port is on that host's loopback, reached through OpenSSH.
                ...(target.jump !== undefined
                  ? { sock: openJump(target.jump, target.port) }
                  : { host: "127.0.0.1", port: target.port }),
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
                algorithms: {
                  cipher: {
                    remove: ["chacha20-poly1305@openssh.com"],
                    prepend: ["chacha20-poly1305@openssh.com"],
                    append: []
                  }
                }
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

    /**
     * A line lives in its pool entry's scope: its dials run in that scope (a caller interrupted
     * while waiting does not abandon a half-open connection), and closing the scope (idle, or the
     * transport's end) closes its connections. Dead connections are replaced inside the line, not
     * by `RcMap.invalidate`: in effect 3.22 an entry invalidated while still referenced removes,
     * once finally released, whichever newer entry then holds its key from the map.
     */
    const makeLine = (key: LineKey): Effect.Effect<Line, never, Scope.Scope> =>
      Effect.gen(function* () {
        const scope = yield* Effect.scope
        const slots = yield* Effect.makeSemaphore(config.maxConnectionsPerVm)
        const conns = new Set<Conn>()
        /**
         * The dial under way, if any. One at a time: callers without an idle connection share it
         * (and its failure), and sshd never sees a burst of handshakes (dropbear drops a client's
         * sixth unauthenticated connection).
         */
        let dialing: Deferred.Deferred<void, CannotReach> | undefined

        /** Marks an idle live connection busy and returns it; forgets dead ones on the way. */
        const claim = (): Conn | undefined => {
          for (const conn of conns) {
            if (!conn.alive) {
              conns.delete(conn)
              closeConn(conn)
            } else if (!conn.busy) {
              conn.busy = true
              return conn
            }
          }
          return undefined
        }
        const dialOne = Effect.suspend(() => {
          if (dialing !== undefined) return Deferred.await(dialing)
          const attempt = Deferred.unsafeMake<void, CannotReach>(FiberId.none)
          dialing = attempt
          const added = Effect.map(dial(key), (conn) => void conns.add(conn))
          return Effect.zipRight(
            Effect.forkIn(
              Effect.ensuring(
                Effect.intoDeferred(added, attempt),
                Effect.sync(() => (dialing = undefined))
              ),
              scope
            ),
            Deferred.await(attempt)
          )
        })
        /** An idle connection, or the next one dialled; another caller may take a new one first, then dial again. */
        const take = (
          restore: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
        ): Effect.Effect<Conn, CannotReach> =>
          Effect.suspend(() => {
            const conn = claim()
            return conn !== undefined ? Effect.succeed(conn) : Effect.zipRight(restore(dialOne), take(restore))
          })
        const use = <A, E>(f: (conn: Conn) => Effect.Effect<A, E>) =>
          slots.withPermits(1)(
            Effect.uninterruptibleMask((restore) =>
              Effect.flatMap(take(restore), (conn) =>
                Effect.ensuring(
                  restore(f(conn)),
                  Effect.sync(() => (conn.busy = false))
                )
              )
            )
          )
        const drop = Effect.sync(() => {
          for (const conn of conns) closeConn(conn)
          conns.clear()
        })
        yield* Effect.addFinalizer(() => drop)
        return { use, drop }
      })

    const lines = yield* RcMap.make({ lookup: makeLine, idleTimeToLive: Duration.millis(config.idleTimeoutMs) })

    /** Runs `use` with the target's line held, so it is not closed as idle meanwhile. */
    const withLine = <A, E>(target: SshTarget, use: (line: Line) => Effect.Effect<A, E>): Effect.Effect<A, E> =>
      Effect.scoped(Effect.flatMap(RcMap.get(lines, lineKey(target)), use))

    /**
     * Runs `use` on a connection of the VM's line held for it alone. A pooled connection can die
     * between calls (guest rebooted, sshd restarted) before we notice: `use` fails with `Retry`
     * when it found the connection dead before having any effect on the guest; that connection is
     * closed and `use` runs once more on another.
     */
    const onConnection = <A, E>(
      target: SshTarget,
      use: (conn: Conn) => Effect.Effect<A, E>
    ): Effect.Effect<A, Exclude<E, Retry> | CannotReach> =>
      withLine(target, (line) =>
        line.use((conn) =>
          Effect.tapError(use(conn), (error) => Effect.sync(() => error instanceof Retry && closeConn(conn)))
        )
      ).pipe(
        Effect.retry({ schedule: ON_FRESH_CONNECTION, while: (error) => error instanceof Retry }),
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
        session.then(
          (sftp) => sftp.on("close", drop).on("error", drop),
          (cause: unknown) => cause instanceof SftpUnavailable || drop()
        )
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
      // The connection is held for the whole call; the handle is opened uninterruptibly so it is always closed.
      onConnection(target, (conn) =>
        Effect.scoped(
          Effect.gen(function* () {
            const { sftp, handle } = yield* Effect.acquireRelease(
              Effect.tryPromise({
                try: async () => {
                  const sftp = await sftpSession(conn)
                  const handle = await call<Buffer>((done) => sftp.open(path, flags, attrs, done))
                  return { sftp, handle }
                },
                catch: (cause) => deadOr(conn, cause, () => sftpFailure(target, conn, path, cause))
              }),
              ({ sftp, handle }) =>
                Effect.promise(() =>
                  call<void>((done) => sftp.close(handle, (err) => done(err, undefined))).catch(() => undefined)
                )
            )
            return yield* Effect.tryPromise({
              try: () => use(sftp, handle),
              catch: (cause) => sftpFailure(target, conn, path, cause)
            })
          })
        )
      )

    /** Whole-file copies are idempotent, so a copy that found the connection dead is simply redone. */
    const transfer = (
      target: SshTarget,
      localPath: string,
      remotePath: string,
      copy: (sftp: SFTPWrapper, signal: AbortSignal) => Promise<void>
    ) =>
      onConnection(target, (conn) =>
        Effect.tryPromise({
          try: async (signal) => copy(await sftpSession(conn), signal),
          catch: (cause) => {
            // Local failures carry errno strings, SFTP ones numeric status codes.
            const local = typeof (cause as { code?: unknown } | null)?.code === "string"
            return local
              ? sftpFailure(target, conn, localPath, cause)
              : deadOr(conn, cause, () => sftpFailure(target, conn, remotePath, cause))
          }
        })
      )

    const readChunk = (sftp: SFTPWrapper, handle: Buffer, position: number, length: number) =>
      new Promise<Buffer>((resolve, reject) => {
        const buffer = Buffer.alloc(length)
        try {
          sftp.read(handle, buffer, 0, length, position, (err, bytesRead) =>
            err ? reject(err) : resolve(buffer.subarray(0, bytesRead))
          )
        } catch (error) {
          reject(error)
        }
      })

    /**
     * Ends a command still running: TERM (GuestOps' exec wrapper then takes the command's whole
     * process group down), KILL after the grace, and our side of the channel closed. A connection
     * whose channel the guest never closed is closed too: the command may still end later, and its
     * exit would close a channel opened on that connection meanwhile (see `Conn`).
     */
    const stopCommand = async (conn: Conn, channel: ClientChannel) => {
      if (serverClosed(channel)) return
      sendSignal(channel, "TERM")
      if (await closedWithin(channel, config.killGraceMs)) return
      sendSignal(channel, "KILL")
      channel.close()
      if (!(await closedWithin(channel, config.killGraceMs))) closeConn(conn)
    }

    const exec = (
      target: SshTarget,
      argv: ReadonlyArray<string>,
      execOptions: ExecOptions = {}
    ): Effect.Effect<ExecOutput, CannotReach> =>
      Effect.gen(function* () {
        const commandOptions = {
          ...(execOptions.cwd !== undefined ? { cwd: execOptions.cwd } : {}),
          ...(execOptions.env !== undefined ? { env: execOptions.env } : {})
        }
        const command = yield* Effect.try({ try: () => guestCommand(argv, commandOptions), catch: (e) => e }).pipe(
          Effect.orDie
        )
        return yield* onConnection(target, (conn) =>
          Effect.acquireUseRelease(
            Effect.tryPromise({
              try: () => startCommand(conn, command),
              // Never asked again on a live connection: a refusal may be a channel closed under a command that still runs.
              catch: (cause) =>
                deadOr(conn, cause, () => (isExecRefused(cause) ? refused(target) : unreachable(target, cause)))
            }),
            (started) => runChannel(target, conn, started, execOptions),
            // Finished, failed or interrupted: nothing of the command stays attached to the connection.
            (started) => Effect.promise(() => stopCommand(conn, started.channel))
          )
        )
      })

    const runChannel = (target: SshTarget, conn: Conn, started: Started, options: ExecOptions) =>
      Effect.async<ExecOutput, CannotReach>((resume) => {
        const { channel } = started
        const cap = options.maxOutputBytes ?? config.defaultMaxOutputBytes
        const stdout = new Capped(cap)
        const stderr = new Capped(cap)
        let timedOut = false
        let finished = false
        let timer: NodeJS.Timeout | undefined

        const result = (): ExecOutput => ({
          // Stopped on timeout without the guest reporting how: report it as the KILL it ended with.
          exitCode: started.exitCode ?? 128 + osConstants.signals.SIGKILL,
          stdout: stdout.bytes(),
          stderr: stderr.bytes(),
          timedOut,
          truncated: stdout.truncated || stderr.truncated
        })
        const finish = (outcome: Effect.Effect<ExecOutput, CannotReach>) => {
          if (finished) return
          finished = true
          clearTimeout(timer)
          resume(outcome)
        }
        const deliver = (sink: ((chunk: Uint8Array) => void) | undefined, chunk: Buffer) => {
          if (sink === undefined) return
          try {
            sink(chunk)
          } catch (error) {
            // A throwing callback must not become an uncaught exception in an event handler.
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
        channel.on("close", () => {
          const done = () => {
            if (started.exitCode !== undefined || timedOut) finish(Effect.succeed(result()))
            else finish(Effect.fail(conn.alive ? withoutStatus(target) : lost(target)))
          }
          // `close` follows stdout's end; stderr may still hold its last chunk.
          if (channel.stderr.readableEnded || channel.stderr.destroyed) done()
          else channel.stderr.once("end", done).once("close", done)
        })

        if (options.timeoutMs !== undefined) {
          timer = setTimeout(
            () => {
              timedOut = true
              // The guest reports the exit and closes; one that does not is cut off, and the output so far returned.
              void stopCommand(conn, channel).then(() => finish(Effect.succeed(result())))
            },
            Math.max(0, options.timeoutMs)
          )
        }

        // stdin, then EOF: a command reading stdin must not wait for more.
        if (options.stdin === undefined) channel.end()
        else
          channel.end(
            typeof options.stdin === "string" ? Buffer.from(options.stdin, "utf8") : Buffer.from(options.stdin)
          )

        // Interrupted: the release of `exec` stops the command.
        return Effect.sync(() => {
          finished = true
          clearTimeout(timer)
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
      withHandle(
        target,
        path,
        writeOptions.append ? "a" : "w",
        writeOptions.mode === undefined ? {} : { mode: writeOptions.mode },
        async (sftp, handle) => {
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
        }
      )

    const upload: Transport["upload"] = (target, localPath, remotePath) =>
      transfer(target, localPath, remotePath, (sftp) =>
        call<void>((done) => sftp.fastPut(localPath, remotePath, BULK, (err) => done(err, undefined)))
      )

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
