import { spawn } from "node:child_process"
import { Duplex } from "node:stream"
import type { SshJump } from "../ports/guest-transport.js"
import { shellWord } from "./quote.js"

/** How long OpenSSH may take to reach the jump host before it gives up (an unanswering host otherwise waits for TCP's own timeout). */
const JUMP_CONNECT_TIMEOUT_S = 10

/** What a person reads for the jump host: `user@host:port`. */
export const jumpName = (jump: SshJump): string =>
  `${jump.user !== undefined ? `${jump.user}@` : ""}${jump.host}${jump.port !== undefined ? `:${jump.port}` : ""}`

/**
 * OpenSSH's options and destination for the jump host, without a command: never prompting
 * (BatchMode), the URI's key and host-key choice, `--` before the host so no URI makes an option.
 */
const jumpOptions = (jump: SshJump): string[] => [
  "-o",
  "BatchMode=yes",
  "-o",
  `ConnectTimeout=${JUMP_CONNECT_TIMEOUT_S}`,
  "-o",
  "LogLevel=ERROR",
  // Unchecked means neither checked nor recorded: a host whose key changed (rebuilt) still carries
  // the stream, where a known_hosts mismatch would make OpenSSH refuse forwarding.
  ...(jump.noVerify === true ? ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"] : []),
  ...(jump.port !== undefined ? ["-p", String(jump.port)] : []),
  ...(jump.user !== undefined ? ["-l", jump.user] : []),
  ...(jump.identityFile !== undefined ? ["-i", jump.identityFile] : []),
  "--",
  jump.host
]

/** `ssh … -W 127.0.0.1:PORT host`: OpenSSH connects to the jump host and carries one TCP stream to its loopback port. */
export const jumpArgv = (jump: SshJump, port: number): string[] => ["-W", `127.0.0.1:${port}`, ...jumpOptions(jump)]

/**
 * The same jump as an ssh ProxyCommand, for the system ssh client a person runs (`stoat ssh`):
 * one string ssh hands to the shell, every word quoted and `%` escaped from ssh's own expansion.
 */
export const jumpProxyCommand = (jump: SshJump): string =>
  ["ssh", "-W", "%h:%p", ...jumpOptions(jump).map((word) => shellWord(word).replaceAll("%", "%%"))].join(" ")

/**
 * A byte stream to `127.0.0.1:port` on the jump host, carried by OpenSSH (spawned with an
 * argument array, never a shell). It fails with ssh's own stderr when ssh exits with an error
 * (host unreachable, auth refused, nothing listening on the port) and ends when ssh ends cleanly;
 * destroying it ends ssh.
 */
export const openJump = (jump: SshJump, port: number): Duplex => {
  const child = spawn("ssh", jumpArgv(jump, port), { stdio: ["pipe", "pipe", "pipe"] })
  let stderr = ""
  child.stderr.on("data", (chunk: Buffer) => {
    if (stderr.length < 4096) stderr += chunk.toString("utf8")
  })
  const sock = new Duplex({
    read: () => void child.stdout.resume(),
    write: (chunk: Buffer, _encoding, done) => {
      child.stdin.write(chunk, (error) => done(error ?? null))
    },
    final: (done) => {
      child.stdin.end()
      done()
    },
    destroy: (error, done) => {
      child.kill()
      done(error)
    }
  })
  child.stdout.on("data", (chunk: Buffer) => {
    if (!sock.push(chunk)) child.stdout.pause()
  })
  // A write after ssh exited: its exit (below) says why.
  child.stdin.on("error", () => undefined)
  child.on("error", (error) => sock.destroy(new Error(`cannot run ssh to ${jumpName(jump)}: ${error.message}`)))
  // After stdout has drained: everything ssh carried is delivered before the outcome.
  child.on("close", (code, signal) => {
    if (code === 0 || sock.destroyed) return void sock.push(null)
    const said = stderr.replace(/\s+/g, " ").trim()
    sock.destroy(
      new Error(
        `ssh to ${jumpName(jump)} (forwarding 127.0.0.1:${port}) ended with ${signal ?? `exit ${code}`}${said !== "" ? `: ${said}` : ""}`
      )
    )
  })
  return sock
}
