import { connect as netConnect } from "node:net"
import { type Context, Effect, RcMap, type Scope } from "effect"
import type { GuestTransport, SshJump } from "../ports/guest-transport.js"
import { openJump } from "./jump.js"

const PROBE_TIMEOUT_MS = 2_000

/**
 * TCP connect to the forwarded port, then wait for the 4-byte `SSH-` banner: user-mode NAT
 * accepts the connection before the guest's sshd exists, so connect alone proves nothing.
 * Plain TCP: answering "is sshd up" never waits for ssh2 to load. A VM on another host is
 * probed the same way on that host's loopback, through the jump (one OpenSSH process per probe):
 * the banner is the same proof there, and `up --wait` needs no other readiness path.
 */
const probeOnce = (port: number, timeoutMs: number, jump: SshJump | undefined) =>
  Effect.async<boolean>((resume) => {
    let received = Buffer.alloc(0)
    let done = false
    const socket = jump !== undefined ? openJump(jump, port) : netConnect({ host: "127.0.0.1", port })
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
    // A jump's stream ends without closing (its writable side stays open): the end is the answer.
    socket.on("end", () => finish(false))
    socket.on("close", () => finish(false))
    return Effect.sync(() => {
      done = true
      clearTimeout(timer)
      socket.destroy()
    })
  })

/**
 * The transport's `probe`: one probe per port (and host) at a time, since `wait` loops may run
 * concurrently and the guest should see one client. A port's gate lives only while a probe holds
 * or awaits it.
 */
export const makeSshProbe = (): Effect.Effect<Context.Tag.Service<GuestTransport>["probe"], never, Scope.Scope> =>
  Effect.map(
    // Keyed by the port, and the jump host's settings for a port on another host.
    RcMap.make({ lookup: (_endpoint: string) => Effect.makeSemaphore(1) }),
    (gates) =>
      (port, timeoutMs = PROBE_TIMEOUT_MS, jump) =>
        Effect.scoped(
          Effect.flatMap(
            RcMap.get(gates, jump !== undefined ? `${port} ${JSON.stringify(jump)}` : String(port)),
            (gate) => gate.withPermits(1)(probeOnce(port, timeoutMs, jump))
          )
        )
  )
