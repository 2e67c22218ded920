import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigProvider, Effect, Layer, ManagedRuntime, Redacted } from "effect"
import {
  awaitSsh,
  dataRootAt,
  ensureClientKey,
  ensureGuestHostKey,
  guestHostname,
  GuestTransport,
  type GuestSignals,
  Hypervisor,
  isStoatError,
  layoutOf,
  resolveDataRoot,
  type BootPlan,
  type ExecOptions,
  type StartedVm
} from "@stoat/core"
import { GuestTransportLive } from "@stoat/core/ssh"
import type { CommandResult } from "@stoat/wire"
import { vmFiles } from "../argv.js"
import { makeQemuHypervisor, QemuGuestSignalsLive } from "../hypervisor.js"
import { buildTinyGuest } from "../tiny/build.js"

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
   * "tcg" (default) works everywhere. "kvm" is tried first and the VM falls back to TCG when KVM
   * cannot run it (as `STOAT_ACCEL=auto` does for Stoat's own VMs).
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
  /** Scratch folder of this VM: its data root, with keys and the VM folder (console.log, qmp.sock, initrd). Removed on stop. */
  readonly dir: string
  readonly consoleLog: string
  readonly qmpSocket: string
  /** A string runs through the guest's `sh -c`; an array is one argv, quoted for the guest shell. */
  readonly exec: (command: string | ReadonlyArray<string>, options?: TestVmExecOptions) => Promise<TestVmExecResult>
}

export interface RunningTestVm extends TestVm {
  readonly pid: number
  /** Stops QEMU (SIGTERM, then SIGKILL), closes ssh and removes `dir`. Safe to call twice. */
  readonly stop: () => Promise<void>
}

export const DEFAULT_BOOT_TIMEOUT_MS = 300_000
const DEFAULT_EXEC_TIMEOUT_MS = 60_000
/** Another process can take the port between choosing it and QEMU's bind; the start then fails naming it. */
const PORT_ATTEMPTS = 3

/** QEMU daemonizes: every VM started here that was not stopped is killed when this process exits, whatever skipped the teardown. */
const live = new Set<number>()
let exitHookInstalled = false
const killLiveOnExit = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once("exit", () => {
    for (const pid of live) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // Gone already.
      }
    }
  })
}

/** Shared with `stoat pull tiny`, which builds into `<data root>/.cache/tiny` unless STOAT_TINY_CACHE says otherwise. */
const defaultTinyCacheDir = (): string => process.env["STOAT_TINY_CACHE"] || join(resolveDataRoot(), ".cache", "tiny")

const tail = async (path: string, chars = 3_000) => (await readFile(path, "utf8").catch(() => "")).slice(-chars)

/** Stoat's own failure as a plain Error whose message is the one Stoat would print. */
const asError = (cause: unknown): Error =>
  cause instanceof Error ? cause : new Error(isStoatError(cause) ? cause.message : String(cause))

/** A free loopback port the OS hands out (QEMU binds it moments later; a start that loses the race is retried). */
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

/**
 * Builds the tiny guest if needed and boots it as Stoat boots its VMs (the QEMU provider's start,
 * then the readiness `stoat up --wait` uses), in a data root of its own: keys, initrd and sockets
 * live in a fresh temporary folder that `stop` removes.
 */
export const startTestVm = async (options: TestVmOptions = {}): Promise<RunningTestVm> => {
  const name = options.name ?? "test-vm"
  const started = Date.now()
  const bootTimeoutMs = options.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS
  const cache = options.tinyCacheDir ?? defaultTinyCacheDir()
  const dir = await mkdtemp(join(tmpdir(), "stoat-test-vm-"))
  const vm = { name, dir: join(dir, "vm") }
  const files = vmFiles(vm.dir)
  const providers = Layer.mergeAll(
    makeQemuHypervisor({ tinyCacheDir: cache, ...(options.qemu !== undefined ? { qemu: options.qemu } : {}) }),
    QemuGuestSignalsLive,
    GuestTransportLive
  ).pipe(Layer.provide(dataRootAt(dir)))
  const runtime = ManagedRuntime.make(providers)
  // STOAT_ACCEL for this VM only: auto tries KVM and falls back to TCG.
  const accel = ConfigProvider.fromMap(new Map([["STOAT_ACCEL", options.accel === "kvm" ? "auto" : "tcg"]]))
  const run = <A, E>(effect: Effect.Effect<A, E, Hypervisor | GuestTransport | GuestSignals>): Promise<A> =>
    runtime
      .runPromise(effect.pipe(Effect.withConfigProvider(accel)))
      .catch((cause: unknown) => Promise.reject(asError(cause)))
  let pid: number | undefined

  const stop = async () => {
    const running = pid
    pid = undefined
    if (running !== undefined) {
      await run(Effect.flatMap(Hypervisor, (hypervisor) => Effect.ignore(hypervisor.stop(vm, { graceMs: 0 }))))
      live.delete(running)
    }
    await runtime.dispose()
    await rm(dir, { recursive: true, force: true })
  }

  try {
    const paths = layoutOf(dir)
    const [image, client, host] = await Promise.all([
      buildTinyGuest({ cacheDir: join(cache, "debs"), outDir: join(cache, "image") }),
      ensureClientKey(paths),
      ensureGuestHostKey(paths),
      mkdir(join(dir, "work"), { recursive: true }),
      mkdir(vm.dir, { recursive: true })
    ])
    const hostKey = Redacted.make(await readFile(host.privateKeyPath, "utf8"))
    const plan = (sshPort: number): BootPlan => ({
      vm,
      ramMb: options.ramMb ?? 256,
      cpus: options.cpus ?? 1,
      sshPort,
      forwards: [],
      kernel: { path: image.kernel, initrd: image.initrd, append: image.kernelArgs },
      workShare: join(dir, "work"),
      display: "vnc",
      guestIdentity: { authorizedKeys: client.publicKey, hostKey, hostname: guestHostname(name) }
    })

    let sshPort = 0
    let state: StartedVm | undefined
    for (let attempt = 1; state === undefined; attempt++) {
      sshPort = await freeLoopbackPort()
      const bootPlan = plan(sshPort)
      const result = await runtime.runPromise(
        Effect.either(
          Effect.flatMap(Hypervisor, (hypervisor) => hypervisor.start(bootPlan)).pipe(Effect.withConfigProvider(accel))
        )
      )
      if (result._tag === "Right") state = result.right
      else if (
        !(result.left._tag === "ProviderStartFailed" && result.left.portInUse !== undefined && attempt < PORT_ATTEMPTS)
      )
        throw asError(result.left)
    }
    pid = state.pid
    if (pid !== undefined) {
      live.add(pid)
      killLiveOnExit()
    }
    await run(awaitSsh(vm, sshPort, Math.max(1_000, bootTimeoutMs - (Date.now() - started)))).catch(
      async (error: Error) => {
        throw new Error(
          `VM ${name} did not boot to SSH: ${error.message}\nguest console (tail):\n${await tail(files.console)}`
        )
      }
    )

    const target = { vm: name, port: sshPort, user: "root", privateKeyPath: client.privateKeyPath }
    const exec = async (
      command: string | ReadonlyArray<string>,
      execOptions: TestVmExecOptions = {}
    ): Promise<TestVmExecResult> => {
      const argv = typeof command === "string" ? ["sh", "-c", command] : command
      const timeoutMs = execOptions.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS
      const transportOptions: ExecOptions = {
        timeoutMs,
        ...(execOptions.stdin !== undefined ? { stdin: execOptions.stdin } : {}),
        ...(execOptions.cwd !== undefined ? { cwd: execOptions.cwd } : {}),
        ...(execOptions.env !== undefined ? { env: execOptions.env } : {})
      }
      const out = await run(
        Effect.flatMap(GuestTransport, (transport) => transport.exec(target, argv, transportOptions))
      )
      if (out.timedOut)
        throw new Error(`command on VM ${name} ran longer than ${timeoutMs} ms and was killed: ${JSON.stringify(argv)}`)
      const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")
      return { stdout: text(out.stdout), stderr: text(out.stderr), exit_code: out.exitCode }
    }

    return {
      name,
      sshPort,
      user: target.user,
      keyPath: client.privateKeyPath,
      dir,
      consoleLog: files.console,
      qmpSocket: files.qmp,
      pid: pid ?? 0,
      exec,
      stop
    }
  } catch (error) {
    await stop()
    throw error
  }
}
