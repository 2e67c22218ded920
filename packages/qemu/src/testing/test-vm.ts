import { spawn, type ChildProcess } from "node:child_process"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Effect, Exit, Scope } from "effect"
import { ensureClientKey, ensureGuestHostKey, guestHostname, layoutOf, resolveDataRoot, type ExecOptions } from "@stoat/core"
import { makeGuestTransport } from "@stoat/core/ssh"
import type { CommandResult } from "@stoat/wire"
import { buildTinyGuest } from "../tiny/build.js"
import { tinyQemuArgs } from "../tiny/argv.js"
import { waitForTinyGuestSsh } from "../tiny/probe.js"
import { toDropbearKey, writeVmInitrd } from "../tiny/vm-initrd.js"
import { forwardNotBound } from "../lifecycle.js"

export interface TestVmOptions {
  /** The guest's hostname and the name in messages (default "test-vm"). */
  readonly name?: string
  readonly ramMb?: number
  readonly cpus?: number
  /**
   * Where the tiny guest is built once and reused (holds `debs/` and `image/`). Default
   * `$STOAT_TINY_CACHE`, else `<STOAT_HOME or ~/.stoat>/.cache/tiny`, the cache `stoat pull tiny` fills.
   */
  readonly tinyCacheDir?: string
  /**
   * "tcg" (default) works everywhere. "kvm" is tried first and QEMU falls back to TCG when KVM
   * cannot start; opt in only on hosts known to run 64-bit guests under KVM (some nested hosts
   * accept KVM and then hang the guest).
   */
  readonly accel?: "tcg" | "kvm"
  /** The QEMU program, a path or a name looked up on PATH (default "qemu-system-x86_64"). */
  readonly qemu?: string
  /** Deadline for SSH to answer, counted from the call: a first-time build of the guest counts against it (default 5 minutes). */
  readonly bootTimeoutMs?: number
}

export interface TestVmExecOptions {
  readonly stdin?: string
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  /** The call fails when the command runs longer (default 60 s). */
  readonly timeoutMs?: number
}

/** What a command left behind, in the shape of Stoat's `--json` exec results. */
export type TestVmExecResult = typeof CommandResult.Type

/** A booted tiny guest, reachable over ssh as root on 127.0.0.1. */
export interface TestVm {
  readonly name: string
  readonly sshPort: number
  readonly user: string
  /** The private key the guest trusts (OpenSSH format, no passphrase). */
  readonly keyPath: string
  /** Scratch folder of this VM: console.log, qmp.sock, initrd, keys. Removed on stop. */
  readonly dir: string
  readonly consoleLog: string
  readonly qmpSocket: string
  /** A string runs through the guest's `sh -c`; an array is one argv, quoted for the guest shell. */
  readonly exec: (command: string | ReadonlyArray<string>, options?: TestVmExecOptions) => Promise<TestVmExecResult>
}

export interface RunningTestVm extends TestVm {
  readonly pid: number
  /** Kills QEMU (SIGTERM, then SIGKILL), closes ssh and removes `dir`. Safe to call twice. */
  readonly stop: () => Promise<void>
}

export const DEFAULT_BOOT_TIMEOUT_MS = 300_000
const DEFAULT_EXEC_TIMEOUT_MS = 60_000
/** How long QEMU gets to exit after SIGTERM before SIGKILL. */
const TERM_GRACE_MS = 5_000
/** Another process can take the port between our probe and QEMU's bind; QEMU then exits at once. */
const PORT_ATTEMPTS = 3

/** Every QEMU started here that has not exited: killed when the process exits, whatever skipped the teardown. */
const live = new Set<ChildProcess>()
let exitHookInstalled = false
const killLiveOnExit = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once("exit", () => {
    for (const child of live) child.kill("SIGKILL")
  })
}

/** Shared with `stoat pull tiny`, which builds into `<data root>/.cache/tiny` unless STOAT_TINY_CACHE says otherwise. */
const defaultTinyCacheDir = (): string => process.env["STOAT_TINY_CACHE"] || join(resolveDataRoot(), ".cache", "tiny")

const freeLoopbackPort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

const tail = async (path: string, chars = 3_000) => (await readFile(path, "utf8").catch(() => "")).slice(-chars)

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

const waitForExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  exited(child)
    ? Promise.resolve(true)
    : new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms)
        child.once("exit", () => {
          clearTimeout(timer)
          resolve(true)
        })
      })

const terminate = async (child: ChildProcess) => {
  if (exited(child)) return
  child.kill("SIGTERM")
  if (await waitForExit(child, TERM_GRACE_MS)) return
  child.kill("SIGKILL")
  await waitForExit(child, TERM_GRACE_MS)
}

const runTyped = async <A, E>(effect: Effect.Effect<A, E>): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}

/**
 * Builds the tiny guest if needed, boots it under QEMU as a child of this process and waits
 * until its sshd answers. Nothing is shared with a Stoat data root: keys, initrd and sockets
 * live in a fresh temporary folder that `stop` removes.
 */
export const startTestVm = async (options: TestVmOptions = {}): Promise<RunningTestVm> => {
  const name = options.name ?? "test-vm"
  const deadline = Date.now() + (options.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS)
  const cache = options.tinyCacheDir ?? defaultTinyCacheDir()
  const dir = await mkdtemp(join(tmpdir(), "stoat-test-vm-"))
  const paths = layoutOf(dir)
  const consoleLog = join(dir, "console.log")
  const qmpSocket = join(dir, "qmp.sock")
  const scope = Effect.runSync(Scope.make())
  let child: ChildProcess | undefined

  const stop = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (child !== undefined) await terminate(child)
    await rm(dir, { recursive: true, force: true })
  }

  try {
    const [image, client, host] = await Promise.all([
      buildTinyGuest({ cacheDir: join(cache, "debs"), outDir: join(cache, "image") }),
      ensureClientKey(paths),
      ensureGuestHostKey(paths)
    ])
    const initrd = join(dir, "initrd.img")
    await writeVmInitrd({
      baseInitrd: image.initrd,
      out: initrd,
      authorizedKeys: client.publicKey,
      hostKeyDropbear: await toDropbearKey(await readFile(host.privateKeyPath, "utf8")),
      hostname: guestHostname(name)
    })

    let sshPort = 0
    for (let attempt = 1; ; attempt++) {
      sshPort = await freeLoopbackPort()
      const args = tinyQemuArgs({ image, initrd, ramMb: options.ramMb ?? 256, cpus: options.cpus ?? 1, sshPort, vmDir: dir, consoleLog, qmpSocket })
      // QEMU takes the first accelerator that initialises, so this keeps TCG as the fallback.
      const accel = options.accel === "kvm" ? ["-accel", "kvm"] : []
      const started = spawn(options.qemu ?? "qemu-system-x86_64", [...accel, ...args], { stdio: ["ignore", "ignore", "pipe"] })
      child = started
      live.add(started)
      killLiveOnExit()
      let stderr = ""
      started.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
      let spawnFailed = false
      const spawnError = new Promise<Error>((resolve) =>
        started.once("error", (error) => {
          spawnFailed = true
          live.delete(started)
          resolve(error)
        })
      )
      started.once("exit", () => live.delete(started))
      const ready = waitForTinyGuestSsh({
        port: sshPort,
        consoleLog,
        consoleOffset: 0,
        timeoutMs: Math.max(1_000, deadline - Date.now()),
        isAlive: () => !spawnFailed && !exited(started)
      })
      const outcome = await Promise.race([ready.then(() => undefined, (error: Error) => error), spawnError])
      if (outcome === undefined) break
      if (spawnFailed) child = undefined
      else await terminate(started)
      if (forwardNotBound(stderr) !== undefined && attempt < PORT_ATTEMPTS) continue
      throw new Error(
        `VM ${name} did not boot to SSH: ${outcome.message}` +
          (stderr.trim() ? `\nqemu stderr:\n${stderr.trim()}` : "") +
          `\nguest console (tail):\n${await tail(consoleLog)}`
      )
    }

    const transport = await runTyped(Scope.extend(makeGuestTransport(), scope))
    const target = { vm: name, port: sshPort, user: "root", privateKeyPath: client.privateKeyPath }
    const exec = async (command: string | ReadonlyArray<string>, execOptions: TestVmExecOptions = {}): Promise<TestVmExecResult> => {
      const argv = typeof command === "string" ? ["sh", "-c", command] : command
      const timeoutMs = execOptions.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS
      const transportOptions: ExecOptions = {
        timeoutMs,
        ...(execOptions.stdin !== undefined ? { stdin: execOptions.stdin } : {}),
        ...(execOptions.cwd !== undefined ? { cwd: execOptions.cwd } : {}),
        ...(execOptions.env !== undefined ? { env: execOptions.env } : {})
      }
      const out = await runTyped(transport.exec(target, argv, transportOptions))
      if (out.timedOut) throw new Error(`command on VM ${name} ran longer than ${timeoutMs} ms and was killed: ${JSON.stringify(argv)}`)
      const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")
      return { stdout: text(out.stdout), stderr: text(out.stderr), exit_code: out.exitCode }
    }

    const pid = child?.pid ?? 0
    return { name, sshPort, user: target.user, keyPath: client.privateKeyPath, dir, consoleLog, qmpSocket, pid, exec, stop }
  } catch (error) {
    await stop()
    throw error
  }
}
