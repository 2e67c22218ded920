import { connect, type Socket } from "node:net"
import { Clock, Duration, Effect, Schedule, type Scope } from "effect"
import { ControlRejected, ControlUnreachable, elapsedSince } from "@stoat/core"

export interface QmpEvent {
  readonly event: string
  readonly data: Record<string, unknown>
  readonly timestamp?: { readonly seconds: number; readonly microseconds: number }
}

export interface QmpOptions {
  /** The VM the socket belongs to; carried as the errors' subject. */
  readonly subject?: string
  /** Budget for connecting (retried while QEMU is still creating the socket) plus the greeting. Default 5 s. */
  readonly connectTimeoutMs?: number
  /** Default per-command deadline. Default 10 s. */
  readonly commandTimeoutMs?: number
}

export type QmpError = ControlUnreachable | ControlRejected

/** One negotiated QMP connection. Only valid inside the scope that opened it. */
export interface Qmp {
  readonly version: { readonly major: number; readonly minor: number; readonly micro: number }
  /** Runs a command and answers its `return` value; a QMP `error` reply fails with ControlRejected. */
  readonly execute: <A = unknown>(
    command: string,
    args?: Record<string, unknown>,
    options?: { readonly timeoutMs?: number }
  ) => Effect.Effect<A, QmpError>
  /** Every event received on this connection so far, oldest first. */
  readonly events: Effect.Effect<ReadonlyArray<QmpEvent>>
  /** The first event (received on this connection, not yet returned by an earlier call) that matches. */
  readonly waitForEvent: (
    match: string | ((event: QmpEvent) => boolean),
    timeoutMs: number
  ) => Effect.Effect<QmpEvent, ControlUnreachable>
  /** Completes when QEMU closes the connection (it does when it exits). */
  readonly closed: Effect.Effect<void>
}

interface Pending {
  readonly resolve: (value: unknown) => void
  /** QEMU answered with an error reply. */
  readonly reject: (desc: string) => void
  /** The connection went away before the reply. */
  readonly lost: (reason: string) => void
}

/** The line protocol under a Qmp: replies matched by id, events kept, waiters woken. */
class Connection {
  private buffer = ""
  private nextId = 1
  readonly pending = new Map<string, Pending>()
  readonly events: QmpEvent[] = []
  readonly consumed = new Set<QmpEvent>()
  readonly wakers = new Set<() => void>()
  greeting: Record<string, unknown> | undefined
  closedReason: string | undefined

  constructor(readonly socket: Socket) {
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => this.onData(chunk))
    socket.on("error", (error) => this.onClose(error.message))
    socket.on("close", () => this.onClose("QEMU closed the connection"))
  }

  id(): string {
    return `stoat-${this.nextId++}`
  }

  private wake(): void {
    for (const waker of [...this.wakers]) waker()
  }

  private onData(chunk: string): void {
    this.buffer += chunk
    for (let newline = this.buffer.indexOf("\n"); newline >= 0; newline = this.buffer.indexOf("\n")) {
      const line = this.buffer.slice(0, newline).trim()
      this.buffer = this.buffer.slice(newline + 1)
      if (line !== "") this.onMessage(line)
    }
  }

  private onMessage(line: string): void {
    let message: Record<string, unknown>
    try {
      message = JSON.parse(line) as Record<string, unknown>
    } catch {
      return
    }
    if ("QMP" in message) {
      this.greeting = message
    } else if (typeof message["event"] === "string") {
      const event: QmpEvent = {
        event: message["event"],
        data: (message["data"] as Record<string, unknown> | undefined) ?? {},
        ...(message["timestamp"] ? { timestamp: message["timestamp"] as QmpEvent["timestamp"] & object } : {})
      }
      this.events.push(event)
    } else if (typeof message["id"] === "string") {
      const pending = this.pending.get(message["id"])
      this.pending.delete(message["id"])
      if (pending && "error" in message)
        pending.reject((message["error"] as { desc?: string } | undefined)?.desc ?? "unknown error")
      else pending?.resolve(message["return"])
    }
    this.wake()
  }

  private onClose(reason: string): void {
    if (this.closedReason !== undefined) return
    this.closedReason = reason
    for (const pending of this.pending.values()) pending.lost(reason)
    this.pending.clear()
    this.wake()
  }
}

const unreachable = (socketPath: string, why: string, subject: string | undefined) =>
  new ControlUnreachable({
    message: `QEMU monitor ${socketPath}: ${why}`,
    ...(subject !== undefined ? { subject } : {})
  })

/** Suspends until `ready` answers something defined, re-checking whenever the connection hears anything. */
const waitUntil = <A>(connection: Connection, ready: () => A | undefined): Effect.Effect<A> =>
  Effect.async<A>((resume) => {
    const check = () => {
      const value = ready()
      if (value === undefined) return false
      connection.wakers.delete(waker)
      resume(Effect.succeed(value))
      return true
    }
    const waker = () => void check()
    if (check()) return
    connection.wakers.add(waker)
    return Effect.sync(() => connection.wakers.delete(waker))
  })

const connectOnce = (socketPath: string) =>
  Effect.async<Socket, { readonly retry: boolean; readonly message: string }>((resume) => {
    const socket = connect(socketPath)
    const onError = (error: NodeJS.ErrnoException) => {
      socket.destroy()
      // The socket may not exist yet, or exist before QEMU listens on it.
      resume(Effect.fail({ retry: error.code === "ENOENT" || error.code === "ECONNREFUSED", message: error.message }))
    }
    socket.once("error", onError)
    socket.once("connect", () => {
      socket.off("error", onError)
      // Keep errors from being unhandled until the Connection takes over the socket.
      socket.on("error", () => undefined)
      resume(Effect.succeed(socket))
    })
    return Effect.sync(() => socket.destroy())
  })

/**
 * Opens QEMU's QMP socket for the current scope: connects (retrying briefly while QEMU creates the
 * socket), reads the greeting and negotiates capabilities. QMP serves one client at a time and a
 * second connection just waits, so keep the scope short: connect, do the work, close.
 */
export const qmpConnect = (
  socketPath: string,
  options: QmpOptions = {}
): Effect.Effect<Qmp, ControlUnreachable, Scope.Scope> =>
  Effect.gen(function* () {
    const subject = options.subject
    const budget = options.connectTimeoutMs ?? 5_000
    const commandTimeout = options.commandTimeoutMs ?? 10_000
    const started = yield* Clock.currentTimeMillis

    const socket = yield* Effect.acquireRelease(
      connectOnce(socketPath).pipe(
        Effect.retry({
          schedule: Schedule.spaced(Duration.millis(50)).pipe(Schedule.upTo(Duration.millis(budget))),
          while: (failure) => failure.retry
        }),
        Effect.mapError((failure) => unreachable(socketPath, failure.message, subject))
      ),
      (socket) => Effect.sync(() => socket.destroy())
    )
    const connection = new Connection(socket)

    const greeting = yield* waitUntil(
      connection,
      () => connection.greeting ?? (connection.closedReason !== undefined ? null : undefined)
    ).pipe(
      Effect.timeoutFail({
        duration: Math.max(1_000, budget - (yield* elapsedSince(started))),
        onTimeout: () =>
          unreachable(socketPath, `no greeting within ${budget} ms (another client may be connected)`, subject)
      })
    )
    if (greeting === null) return yield* unreachable(socketPath, connection.closedReason ?? "closed", subject)

    const execute = <A = unknown>(
      command: string,
      args?: Record<string, unknown>,
      opts: { readonly timeoutMs?: number } = {}
    ) => {
      const timeoutMs = opts.timeoutMs ?? commandTimeout
      return Effect.async<A, QmpError>((resume) => {
        if (connection.closedReason !== undefined) {
          resume(Effect.fail(unreachable(socketPath, connection.closedReason, subject)))
          return
        }
        const id = connection.id()
        connection.pending.set(id, {
          resolve: (value) => resume(Effect.succeed(value as A)),
          reject: (desc) =>
            resume(
              Effect.fail(
                new ControlRejected({ message: `${command}: ${desc}`, ...(subject !== undefined ? { subject } : {}) })
              )
            ),
          lost: (reason) => resume(Effect.fail(unreachable(socketPath, `${reason} during ${command}`, subject)))
        })
        socket.write(
          `${JSON.stringify(args === undefined ? { execute: command, id } : { execute: command, arguments: args, id })}\n`
        )
        return Effect.sync(() => connection.pending.delete(id))
      }).pipe(
        Effect.timeoutFail({
          duration: timeoutMs,
          onTimeout: () => unreachable(socketPath, `no answer to ${command} within ${timeoutMs} ms`, subject)
        })
      )
    }

    yield* execute("qmp_capabilities").pipe(
      Effect.catchTag("ControlRejected", (error) =>
        Effect.fail(unreachable(socketPath, `capabilities refused: ${error.message}`, subject))
      )
    )

    const version = (greeting["QMP"] as { version?: { qemu?: Qmp["version"] } } | undefined)?.version?.qemu ?? {
      major: 0,
      minor: 0,
      micro: 0
    }
    const qmp: Qmp = {
      version,
      execute,
      events: Effect.sync(() => [...connection.events]),
      waitForEvent: (match, timeoutMs) => {
        const matches = typeof match === "string" ? (event: QmpEvent) => event.event === match : match
        return waitUntil(connection, () => {
          const found = connection.events.find((event) => !connection.consumed.has(event) && matches(event))
          if (found) {
            connection.consumed.add(found)
            return { found }
          }
          return connection.closedReason !== undefined ? { found: undefined } : undefined
        }).pipe(
          Effect.flatMap(({ found }) =>
            found
              ? Effect.succeed(found)
              : Effect.fail(unreachable(socketPath, connection.closedReason ?? "closed", subject))
          ),
          Effect.timeoutFail({
            duration: timeoutMs,
            onTimeout: () =>
              unreachable(
                socketPath,
                `no ${typeof match === "string" ? match : "matching"} event within ${timeoutMs} ms`,
                subject
              )
          })
        )
      },
      closed: waitUntil(connection, () => (connection.closedReason !== undefined ? true : undefined)).pipe(
        Effect.asVoid
      )
    }
    return qmp
  })

/** Connect, run `use`, disconnect. */
export const withQmp = <A, E, R>(
  socketPath: string,
  use: (qmp: Qmp) => Effect.Effect<A, E, R>,
  options: QmpOptions = {}
): Effect.Effect<A, E | ControlUnreachable, Exclude<R, Scope.Scope>> =>
  Effect.scoped(Effect.flatMap(qmpConnect(socketPath, options), use))

/** One command on a fresh connection. */
export const qmpExecute = <A = unknown>(
  socketPath: string,
  command: string,
  args?: Record<string, unknown>,
  options: QmpOptions = {}
): Effect.Effect<A, QmpError> => withQmp(socketPath, (qmp) => qmp.execute<A>(command, args), options)
