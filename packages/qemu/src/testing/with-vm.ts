import { access, constants, readFile } from "node:fs/promises"
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest"
import { findOnPath } from "@stoat/core"
import { DEFAULT_BOOT_TIMEOUT_MS, startTestVm, type RunningTestVm, type TestVm, type TestVmOptions } from "./test-vm.js"

export interface WithVmOptions extends TestVmOptions {
  /**
   * "file" (default): one VM for all tests of the describe block (or file) that calls withVm,
   * booted in beforeAll and stopped in afterAll. "test": a fresh VM for each test.
   */
  readonly scope?: "file" | "test"
  /** Without QEMU, "skip" (default) skips each test here with the reason; "fail" fails them (for CI that must run them). */
  readonly whenQemuMissing?: "skip" | "fail"
}

/** Boot to SSH is bounded by startTestVm's own deadline; the hook gets a little longer so that message wins. */
const HOOK_MARGIN_MS = 30_000
/** SIGTERM grace plus SIGKILL wait in RunningTestVm.stop, with room to spare. */
const STOP_HOOK_TIMEOUT_MS = 20_000

/** Why the VM cannot boot here, or undefined when the QEMU program exists. */
const qemuMissingReason = async (qemu: string): Promise<string | undefined> => {
  const found = qemu.includes("/")
    ? await access(qemu, constants.X_OK).then(
        () => true,
        () => false
      )
    : (await findOnPath(qemu)) !== undefined
  if (found) return undefined
  return `${qemu} was not found${qemu.includes("/") ? "" : " on PATH"}: withVm needs QEMU to boot its VM (on Debian/Ubuntu: apt-get install qemu-system-x86)`
}

/**
 * Registers vitest hooks that boot a real tiny guest (busybox + dropbear, under TCG unless
 * `accel: "kvm"`) and stop it afterwards, whether the tests passed or not. Returns a handle
 * that is usable inside the tests. Without QEMU every test here is skipped with the reason
 * and a warning says so (or fails, with `whenQemuMissing: "fail"`); nothing is skipped silently.
 *
 *   describe("my tool in a VM", () => {
 *     const vm = withVm()
 *     it("runs", async () => expect((await vm.exec("uname -s")).stdout).toBe("Linux\n"))
 *   })
 */
export const withVm = (options: WithVmOptions = {}): TestVm => {
  const name = options.name ?? "test-vm"
  const qemu = options.qemu ?? "qemu-system-x86_64"
  const hookTimeout = (options.bootTimeoutMs ?? DEFAULT_BOOT_TIMEOUT_MS) + HOOK_MARGIN_MS
  let current: RunningTestVm | undefined
  let missing: Promise<string | undefined> | undefined

  /** Looked up once per withVm call. In "skip" mode the warning is printed once, and each test carries the reason. */
  const qemuMissing = (): Promise<string | undefined> =>
    (missing ??= qemuMissingReason(qemu).then((reason) => {
      if (reason !== undefined && options.whenQemuMissing !== "fail") {
        console.warn(`\n*** withVm(${name}): SKIPPING the tests that need this VM. ${reason} ***\n`)
      }
      return reason
    }))
  const skipOrFail = (context: { readonly skip: (note: string) => never }, reason: string): never => {
    if (options.whenQemuMissing === "fail") throw new Error(reason)
    return context.skip(reason)
  }
  const boot = async () => {
    current = await startTestVm(options)
  }
  const stop = async () => {
    const vm = current
    current = undefined
    await vm?.stop()
  }

  if (options.scope === "test") {
    beforeEach(async (context) => {
      const reason = await qemuMissing()
      if (reason !== undefined) return skipOrFail(context, reason)
      await boot()
    }, hookTimeout)
  } else {
    let reason: string | undefined
    beforeAll(async () => {
      reason = await qemuMissing()
      if (reason === undefined) await boot()
    }, hookTimeout)
    // Reported on each test rather than as a failed beforeAll, which vitest would show as skipped tests.
    beforeEach((context) => {
      if (reason !== undefined) skipOrFail(context, reason)
    })
    afterAll(stop, STOP_HOOK_TIMEOUT_MS)
  }
  afterEach(async (context) => {
    // The serial console is the only view of what went wrong inside the guest, and stop removes it.
    if (context.task.result?.state === "fail" && current !== undefined) {
      const log = await readFile(current.consoleLog, "utf8").catch(() => "")
      console.error(`withVm(${name}) guest console (tail):\n${log.slice(-2_000)}`)
    }
    if (options.scope === "test") await stop()
  }, STOP_HOOK_TIMEOUT_MS)

  const running = (): RunningTestVm => {
    if (current === undefined) {
      throw new Error(
        `withVm(${name}): no VM is running here; use the handle inside the tests of the describe block that called withVm`
      )
    }
    return current
  }
  return {
    name,
    get sshPort() {
      return running().sshPort
    },
    get user() {
      return running().user
    },
    get keyPath() {
      return running().keyPath
    },
    get dir() {
      return running().dir
    },
    get consoleLog() {
      return running().consoleLog
    },
    get qmpSocket() {
      return running().qmpSocket
    },
    exec: (command, execOptions) => running().exec(command, execOptions)
  }
}
