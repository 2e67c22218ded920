/**
 * A real ssh server for the transport tests: ssh2's `Server` on 127.0.0.1 with a real host key
 * and real public-key auth; exec requests run under `/bin/sh -c` on this host and the `sftp`
 * subsystem is OpenSSH's own `sftp-server` (what dropbear guests run too). When the tests run
 * as root, sftp-server runs as `nobody` so that permission errors are real.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { chmodSync, chownSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { createServer, type Server as NetServer, type Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import ssh2 from "ssh2"
import type { Connection, ServerChannel } from "ssh2"
import { layoutOf, type DataRootPaths } from "../../src/platform/data-root.js"
import { ensureClientKey, ensureGuestHostKey, type KeyPair } from "../../src/platform/keys.js"

const SFTP_SERVERS = [
  "/usr/lib/openssh/sftp-server",
  "/usr/lib/sftp-server",
  "/usr/libexec/sftp-server",
  "/usr/libexec/openssh/sftp-server"
]
export const sftpServerPath = SFTP_SERVERS.find((path) => existsSync(path))

/** uid/gid sftp-server runs as: `nobody` when we are root, else ourselves. */
export const sftpIdentity = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined

export interface TestSshServer {
  readonly port: number
  readonly root: DataRootPaths
  readonly clientKey: KeyPair
  /** Writable by the sftp-server user. */
  readonly files: string
  /** TCP connections accepted so far. */
  connections: number
  /** Client connections open right now. */
  readonly openConnections: () => number
  /** Refuse this many of the next exec requests. */
  refuseExecs: number
  /** Close the channels of this many of the next commands without their exit status. */
  withholdExitStatus: number
  /** The most commands that ever ran at once on one connection. */
  mostCommandsAtOnce: number
  /** Signals the client asked for (`KILL`, …), in order. */
  readonly signals: Array<string>
  /** Commands received, in order. `stoat-test-instant N` is answered at once: output, exit status N, close. */
  readonly commands: Array<string>
  /** Drops every client connection (as a rebooting guest would). */
  readonly dropAll: () => void
  readonly close: () => Promise<void>
}

/**
 * Signals the child's whole process group. `evenIfExited`: also once the child itself is gone (a
 * signal request reaches what is left of the group); a finished command's group is left alone
 * (the jobs it started in the background live on).
 */
const killGroup = (child: ChildProcess, signal: NodeJS.Signals, evenIfExited = false) => {
  if (child.pid === undefined || (!evenIfExited && (child.exitCode !== null || child.signalCode !== null))) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // already gone
  }
}

const runExec = (
  server: TestSshServer,
  channel: ServerChannel,
  command: string,
  onChild: (child: ChildProcess) => void
) => {
  // Own process group, so a kill reaches `sleep` children too and the pipes close.
  const child = spawn("/bin/sh", ["-c", command], {
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
    cwd: server.files
  })
  onChild(child)
  child.stdout.pipe(channel, { end: false })
  child.stderr.pipe(channel.stderr, { end: false })
  channel.pipe(child.stdin)
  child.stdin.on("error", () => undefined)
  const withhold = server.withholdExitStatus > 0
  if (withhold) server.withholdExitStatus--
  child.on("close", (code, signal) => {
    if (withhold) return channel.close()
    if (signal !== null) channel.exit(signal.replace(/^SIG/, ""), false, "")
    else channel.exit(code ?? 255)
    channel.end()
  })
  channel.on("close", () => killGroup(child, "SIGKILL"))
}

export interface TestServerOptions {
  /**
   * "serve" (default): OpenSSH's sftp-server. "refuse": the subsystem request fails (an sshd with
   * no SFTP configured). "exit": accepted, then the channel exits 127 at once (dropbear whose
   * sftp-server binary is missing).
   */
  readonly sftp?: "serve" | "refuse" | "exit"
}

const runSftp = (server: TestSshServer, channel: ServerChannel) => {
  if (sftpServerPath === undefined) return channel.close()
  const child = spawn(sftpServerPath, [], {
    stdio: ["pipe", "pipe", "ignore"],
    cwd: server.files,
    ...(sftpIdentity ?? {})
  })
  channel.pipe(child.stdin)
  child.stdout.pipe(channel)
  child.stdin.on("error", () => undefined)
  child.on("close", () => channel.close())
  channel.on("close", () => child.kill("SIGKILL"))
}

export const startTestServer = async (options: TestServerOptions = {}): Promise<TestSshServer> => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-ssh-test-"))
  const root = layoutOf(join(dir, "root"))
  const clientKey = await ensureClientKey(root)
  const hostKey = await ensureGuestHostKey(root)
  const allowed = ssh2.utils.parseKey(clientKey.publicKey)
  if (allowed instanceof Error) throw allowed
  const files = join(dir, "files")
  // sftp-server may run as another user: it needs to traverse the temp dir.
  chmodSync(dir, 0o755)
  await import("node:fs/promises").then((fs) => fs.mkdir(files))
  if (sftpIdentity) chownSync(files, sftpIdentity.uid, sftpIdentity.gid)

  const clients = new Set<Connection>()
  const state: TestSshServer = {
    port: 0,
    root,
    clientKey,
    files,
    connections: 0,
    openConnections: () => clients.size,
    refuseExecs: 0,
    withholdExitStatus: 0,
    mostCommandsAtOnce: 0,
    signals: [],
    commands: [],
    dropAll: () => {
      for (const client of clients) client.end()
    },
    close: async () => {
      state.dropAll()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(dir, { recursive: true, force: true })
    }
  }

  const server = new ssh2.Server({ hostKeys: [await readFile(hostKey.privateKeyPath)] }, (client) => {
    state.connections++
    let running = 0
    clients.add(client)
    // As a real sshd does (TCP_NODELAY): otherwise Nagle + delayed ACK add ~40 ms per exchange.
    ;(client as unknown as { setNoDelay: (on: boolean) => void }).setNoDelay(true)
    client.on("close", () => clients.delete(client))
    client.on("error", () => undefined)
    client.on("authentication", (ctx) => {
      if (ctx.method !== "publickey") return ctx.reject(["publickey"])
      const same = ctx.key.algo === allowed.type && ctx.key.data.equals(allowed.getPublicSSH())
      if (!same) return ctx.reject()
      if (ctx.signature === undefined || ctx.blob === undefined) return ctx.accept()
      if (allowed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true) return ctx.accept()
      ctx.reject()
    })
    client.on("session", (acceptSession) => {
      const session = acceptSession()
      let child: ChildProcess | undefined
      // ssh2's Server refuses every request on a session once the client sent EOF (stdin
      // done). OpenSSH's sshd still honours `signal` then, which the transport relies on to
      // kill a timed-out command: behave like sshd.
      session.on("eof", () => {
        ;(session as unknown as { _ending: boolean })._ending = false
      })
      session.on("exec", (accept, reject, info) => {
        if (state.refuseExecs > 0) {
          state.refuseExecs--
          return reject()
        }
        state.commands.push(info.command)
        const instant = /^'stoat-test-instant' '(\d+)'$/.exec(info.command)
        if (instant) {
          // Success reply, output, exit status and close in one write burst, as a loaded guest's sshd may deliver them.
          const channel = accept()
          channel.write("instant\n")
          channel.exit(Number(instant[1]))
          return channel.end()
        }
        runExec(state, accept(), info.command, (c) => {
          child = c
          state.mostCommandsAtOnce = Math.max(state.mostCommandsAtOnce, ++running)
          c.on("close", () => running--)
        })
      })
      session.on("signal", (accept, _reject, info) => {
        state.signals.push(info.name)
        if (child) killGroup(child, `SIG${info.name}` as NodeJS.Signals, true)
        accept?.()
      })
      session.on("subsystem", (accept, reject, info) => {
        if (info.name !== "sftp" || options.sftp === "refuse") return reject()
        if (options.sftp === "exit") {
          const channel = accept()
          channel.exit(127)
          return channel.end()
        }
        runSftp(state, accept())
      })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  ;(state as { port: number }).port = (server.address() as { port: number }).port
  return state
}

/** A TCP listener that accepts and then says nothing, like user-mode NAT before the guest's sshd is up. */
export const startSilentListener = async (): Promise<{
  port: number
  accepted: () => number
  close: () => Promise<void>
}> => {
  const sockets = new Set<Socket>()
  let accepted = 0
  const server: NetServer = createServer((socket) => {
    accepted++
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.on("error", () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as { port: number }).port,
    accepted: () => accepted,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/** A port nothing listens on (bound, then released). */
export const closedPort = async (): Promise<number> => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
