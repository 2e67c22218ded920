import { connect as netConnect } from "node:net"
import { type Context, Effect, RcMap, type Scope } from "effect"
import type { GuestTransport } from "../ports/guest-transport.js"

const PROBE_TIMEOUT_MS = 2_000

/**
 * TCP connect to the forwarded port, then wait for the 4-byte `SSH-` banner: user-mode NAT
 * accepts the connection before the guest's sshd exists, so connect alone proves nothing.
 * Plain TCP: answering "is sshd up" never waits for ssh2 to load.
 */
const probeOnce = (port: number, timeoutMs: number) =>
  Effect.async<boolean>((resume) => {
    let received = Buffer.alloc(0)
    let done = false
    const socket = netConnect({ host: "127.0.0.1", port })
    const finish = (reachable: boolean) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resume(Effect.succeed(reachable))
    }
    const timer = setTimeout(() => finish(false), timeoutMs)
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (received.length >= 4) finish(received.subarray(0, 4).toString("latin1") === "SSH-")
    })
    socket.on("error", () => finish(false))
    socket.on("close", () => finish(false))
    return Effect.sync(() => {
      done = true
      clearTimeout(timer)
      socket.destroy()
    })
  })

/**
 * The transport's `probe`: one probe per port at a time, since `wait` loops may run concurrently
 * and the guest should see one client. A port's gate lives only while a probe holds or awaits it.
 */
export const makeSshProbe = (): Effect.Effect<Context.Tag.Service<GuestTransport>["probe"], never, Scope.Scope> =>
  Effect.map(
    RcMap.make({ lookup: (_port: number) => Effect.makeSemaphore(1) }),
    (gates) =>
      (port, timeoutMs = PROBE_TIMEOUT_MS) =>
        Effect.scoped(Effect.flatMap(RcMap.get(gates, port), (gate) => gate.withPermits(1)(probeOnce(port, timeoutMs))))
  )
