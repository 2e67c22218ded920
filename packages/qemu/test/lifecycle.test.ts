/**
 * The Hypervisor layer driving the real tiny guest under TCG: start, status, snapshots while
 * running and restore when stopped, screenshot, graceful and forced stops. The tiny guest is
 * built once into $STOAT_TEST_CACHE/tiny (default ~/.cache/stoat-test/tiny) and reused.
 */
import { execFileSync } from "node:child_process"
import { access, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type BootPlan, isProcessAlive, type VmDisk, type VmRef } from "@stoat/core"
import { vmFiles } from "../src/argv.js"
import { waitForExit } from "../src/lifecycle.js"
import { buildTinyGuest, type TinyGuestImage } from "../src/tiny/build.js"
import {
  awaitSshd,
  build,
  sshBannerOnceReady,
  call,
  elapsed,
  ok,
  requireQemu,
  tinyCacheDir,
  tinyGuestPlan
} from "./support.js"

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false
  )

/** The ext4 superblock magic (0xEF53 at byte 1080) of a qcow2 disk's contents. */
const hasExt4 = (disk: string, scratch: string): boolean => {
  const raw = join(scratch, "head.raw")
  execFileSync("qemu-img", ["dd", "-f", "qcow2", "-O", "raw", "bs=1024", "count=2", `if=${disk}`, `of=${raw}`])
  const head = execFileSync("od", ["-An", "-tx1", "-j1080", "-N2", raw], { encoding: "utf8" }).trim()
  return head === "53 ef"
}

describe("QEMU hypervisor with the tiny guest", () => {
  let image: TinyGuestImage
  let root: string
  let vm: VmRef
  let plan: BootPlan
  let disk: VmDisk
  /** The disk's file on the host. */
  let diskPath: string
  const timings: string[] = []

  beforeAll(async () => {
    requireQemu()
    image = await buildTinyGuest({ cacheDir: join(tinyCacheDir, "debs"), outDir: join(tinyCacheDir, "image") })
    root = await mkdtemp(join(tmpdir(), "stoat-life-"))
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "client", "-f", join(root, "id_stoat")])
    plan = await tinyGuestPlan(root, image, "tiny_test")
    vm = plan.vm
    disk = { vm, file: "disk.qcow2" }
    diskPath = join(vm.dir, "disk.qcow2")
    await ok(root, (h) => h.createDisk(disk, "256M"))
    plan = {
      ...plan,
      disk: disk.file,
      guestIdentity: { ...plan.guestIdentity!, authorizedKeys: await readFile(join(root, "id_stoat.pub"), "utf8") }
    }
  }, 600_000)

  afterAll(async () => {
    // Never leave a QEMU behind, whatever failed.
    const pid = Number.parseInt(await readFile(vmFiles(vm.dir).pidfile, "utf8").catch(() => ""), 10)
    if (pid > 0 && isProcessAlive(pid)) process.kill(pid, "SIGKILL")
    await rm(root, { recursive: true, force: true })
    console.log(timings.join("\n"))
  })

  it("the image builder hands out the cached tiny build as a local image", async () => {
    const local = await build(root, (images) => images.build("tiny"))
    expect(Either.isRight(local) && local.right).toEqual({
      kernel: image.kernel,
      initrd: image.initrd,
      append: image.kernelArgs
    })
    const unknown = await build(root, (images) => images.build("huge"))
    expect(Either.isLeft(unknown) && unknown.left.code).toBe("not_found")
  })

  it("refuses to start plans QEMU could not run: socket path length, share tags, boot files", async () => {
    const deep = { ...plan, vm: { name: "deep", dir: join(root, "d".repeat(100)) } }
    const tags = { ...plan, extraShares: [{ tag: "work", host: plan.workShare }] }
    const noKernel = {
      ...plan,
      kernel: { ...image, path: join(root, "missing-vmlinux"), initrd: image.initrd, append: "" }
    }
    for (const bad of [deep, tags, noKernel]) {
      const result = await call(root, (h) => h.start(bad))
      expect(Either.isLeft(result) && result.left.code).toBe("invalid_spec")
    }
    expect(await exists(vmFiles(vm.dir).pidfile)).toBe(false)
  })

  it("awaitSshd answers false at once for a VM whose start recorded no console line to wait for", async () => {
    const other = { name: "never_started", dir: join(root, "never_started") }
    await mkdir(other.dir)
    expect(await awaitSshd(other, 60_000)).toBe(false)
  })

  it("refuses shares that are missing or not directories", async () => {
    const file = join(root, "a-file")
    await writeFile(file, "x")
    for (const bad of [
      { ...plan, workShare: file },
      { ...plan, hostShare: join(root, "missing") },
      { ...plan, extraShares: [{ tag: "src", host: file }] }
    ]) {
      const result = await call(root, (h) => h.start(bad))
      expect(Either.isLeft(result) && result.left.code).toBe("share_invalid")
    }
    expect((await ok(root, (h) => h.status(vm))).running).toBe(false)
  })

  it("reports QEMU's own message when it cannot start", async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(plan.sshPort, "127.0.0.1", resolve))
    try {
      const result = await call(root, (h) => h.start(plan))
      expect(Either.isLeft(result) && result.left.code).toBe("qemu_start_failed")
      expect(Either.isLeft(result) && result.left.message).toMatch(/host forwarding rule/)
    } finally {
      await new Promise((resolve) => blocker.close(resolve))
    }
    expect(await exists(vmFiles(vm.dir).pidfile)).toBe(false)
  })

  it("starts detached, reports running, refuses a second start; the guest answers SSH", async () => {
    await ok(root, (h) => h.saveSnapshot(disk, "blank"))
    const t0 = performance.now()
    const state = await ok(root, (h) => h.start(plan))
    timings.push(`start → pidfile (includes the cached accel probe): ${elapsed(t0)} ms`)
    expect(state.running).toBe(true)
    expect(await readFile(vmFiles(vm.dir).pidfile, "utf8")).toBe(`${state.pid}\n`)
    expect(state.startedAt).toMatch(/^\d{4}-\d{2}-\d{2}T/)
    expect(await readFile(`/proc/${state.pid}/cmdline`, "utf8")).toContain(`-accel\0${state.accel}\0`)
    expect(await ok(root, (h) => h.status(vm))).toEqual({ running: true, pid: state.pid, startedAt: state.startedAt })
    // The start's record keeps the plan for checkpoints, never the guest's private host key.
    const record = await readFile(vmFiles(vm.dir).boot, "utf8")
    expect(record).not.toContain("PRIVATE KEY")
    expect(JSON.parse(record).plan.guestIdentity.hostKey).toBe("<redacted>")
    const again = await call(root, (h) => h.start(plan))
    expect(Either.isLeft(again) && again.left.code).toBe("already_running")

    // The guest says on its console once sshd listens; the first connection after that line finds it.
    expect(await awaitSshd(vm, 120_000)).toBe(true)
    const banner = await sshBannerOnceReady(root, vm, plan.sshPort, 30_000)
    timings.push(`start → SSH banner: ${elapsed(t0)} ms`)
    expect(banner).toMatch(/^SSH-2\.0-dropbear/)

    // The identity baked into the per-VM initrd: our client key logs in, the guest shows our host key.
    const knownHosts = join(root, "known_hosts")
    await writeFile(
      knownHosts,
      `[127.0.0.1]:${plan.sshPort} ${await readFile(join(root, "guest_host_ed25519_key.pub"), "utf8")}`
    )
    await writeFile(join(plan.workShare, "from-host"), "hello over 9p\n")
    const out = execFileSync(
      "ssh",
      [
        ...[
          "-p",
          String(plan.sshPort),
          "-i",
          join(root, "id_stoat"),
          "-o",
          "BatchMode=yes",
          "-o",
          "StrictHostKeyChecking=yes"
        ],
        ...[
          "-o",
          `UserKnownHostsFile=${knownHosts}`,
          "-o",
          "ConnectTimeout=20",
          "-o",
          "LogLevel=ERROR",
          "root@127.0.0.1"
        ],
        "hostname; cat /mnt/work/from-host"
      ],
      { encoding: "utf8", timeout: 60_000 }
    )
    expect(out).toBe("tiny-test\nhello over 9p\n")
  }, 150_000)

  it("saves, lists and deletes snapshots of the running VM over QMP", async () => {
    const t0 = performance.now()
    await ok(root, (h) => h.saveSnapshot(disk, "live"))
    timings.push(`running snapshot save: ${elapsed(t0)} ms`)
    const t1 = performance.now()
    const list = await ok(root, (h) => h.listSnapshots(disk))
    timings.push(`running snapshot list: ${elapsed(t1)} ms`)
    expect(list.map((snapshot) => [snapshot.tag, snapshot.vm_state])).toEqual([
      ["blank", "stopped"],
      ["live", "running"]
    ])
    await ok(root, (h) => h.saveSnapshot(disk, "doomed"))
    const t2 = performance.now()
    await ok(root, (h) => h.deleteSnapshot(disk, "doomed"))
    timings.push(`running snapshot delete: ${elapsed(t2)} ms`)
    // A tag that is not there is nothing to delete (not_found is the Snapshots service's rule).
    await ok(root, (h) => h.deleteSnapshot(disk, "doomed"))
    expect((await ok(root, (h) => h.listSnapshots(disk))).map((snapshot) => snapshot.tag)).toEqual(["blank", "live"])
  }, 60_000)

  it("takes a PNG screenshot of the display and leaves no file behind", async () => {
    const t0 = performance.now()
    const shot = await ok(root, (h) => h.screenshot(vm))
    timings.push(`screenshot: ${elapsed(t0)} ms (${shot.width}x${shot.height}, ${shot.png.byteLength} bytes)`)
    expect(shot.width).toBeGreaterThanOrEqual(640)
    expect(shot.height).toBeGreaterThanOrEqual(200)
    const out = join(root, "screen.png")
    await writeFile(out, shot.png)
    expect(execFileSync("file", ["-b", out], { encoding: "utf8" })).toMatch(
      new RegExp(`^PNG image data, ${shot.width} x ${shot.height}`)
    )
    expect((await readdir(vm.dir)).filter((name) => name.endsWith(".png"))).toEqual([])
  })

  it("powers down gracefully and returns only once QEMU is gone", async () => {
    const { pid } = await ok(root, (h) => h.status(vm))
    const t0 = performance.now()
    await ok(root, (h) => h.stop(vm))
    timings.push(`graceful stop (ACPI power button): ${elapsed(t0)} ms`)
    // The guest powered itself off: no signal was needed.
    expect(await readFile(vmFiles(vm.dir).console, "utf8")).toMatch(/reboot: Power down\s*$/)
    expect(isProcessAlive(pid ?? 0) && (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")) !== "").toBe(
      false
    )
    for (const file of [vmFiles(vm.dir).pidfile, vmFiles(vm.dir).qmp, vmFiles(vm.dir).vnc])
      expect(await exists(file)).toBe(false)
    expect((await ok(root, (h) => h.status(vm))).running).toBe(false)
    const again = await call(root, (h) => h.stop(vm))
    expect(Either.isLeft(again) && again.left.code).toBe("not_running")
    const shot = await call(root, (h) => h.screenshot(vm))
    expect(Either.isLeft(shot) && shot.left.code).toBe("not_running")
  }, 30_000)

  it("restores snapshots of the stopped VM's disk", async () => {
    // The guest formatted its blank disk at boot; "blank" predates that, "live" does not.
    expect(hasExt4(diskPath, root)).toBe(true)
    const t0 = performance.now()
    await ok(root, (h) => h.restoreSnapshot(disk, "blank"))
    timings.push(`stopped restore: ${elapsed(t0)} ms`)
    expect(hasExt4(diskPath, root)).toBe(false)
    await ok(root, (h) => h.restoreSnapshot(disk, "live"))
    expect(hasExt4(diskPath, root)).toBe(true)
  })

  it("treats a SIGKILLed QEMU as stopped, the files it left reported as leftovers and kept", async () => {
    const t0 = performance.now()
    const { pid } = await ok(root, (h) => h.start(plan))
    timings.push(`start → pidfile (accel probe cached): ${elapsed(t0)} ms`)
    process.kill(pid ?? 0, "SIGKILL")
    await Effect.runPromise(waitForExit(pid ?? 0, vm, 30_000))
    const files = vmFiles(vm.dir)
    const state = await ok(root, (h) => h.status(vm))
    expect(state.running).toBe(false)
    expect(state.leftovers).toEqual(expect.arrayContaining([files.pidfile, files.qmp, files.boot]))
    expect(await exists(files.pidfile)).toBe(true)
    const stop = await call(root, (h) => h.stop(vm))
    expect(Either.isLeft(stop) && stop.left.code).toBe("not_running")
  })

  it("falls back to SIGTERM when the guest ignores the power button", async () => {
    // Seconds into boot nothing in the guest listens for ACPI events yet.
    const { pid } = await ok(root, (h) => h.start(plan))
    const t0 = performance.now()
    await ok(root, (h) => h.stop(vm, { graceMs: 300 }))
    const ms = elapsed(t0)
    timings.push(`stop with 300 ms grace, then SIGTERM: ${ms} ms`)
    expect(ms).toBeLessThan(5_000)
    expect(isProcessAlive(pid ?? 0) && (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")) !== "").toBe(
      false
    )
    expect(await exists(vmFiles(vm.dir).pidfile)).toBe(false)
  })

  it("SIGKILLs a QEMU that neither answers QMP nor exits on SIGTERM", async () => {
    const { pid } = await ok(root, (h) => h.start(plan))
    // A stopped process takes no QMP and leaves SIGTERM pending; only SIGKILL ends it.
    process.kill(pid ?? 0, "SIGSTOP")
    const t0 = performance.now()
    await ok(root, (h) => h.stop(vm, { graceMs: 200 }))
    timings.push(`stop of a frozen QEMU (QMP timeout, SIGTERM wait, SIGKILL): ${elapsed(t0)} ms`)
    expect(isProcessAlive(pid ?? 0) && (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")) !== "").toBe(
      false
    )
    expect((await ok(root, (h) => h.status(vm))).running).toBe(false)
    for (const file of [vmFiles(vm.dir).pidfile, vmFiles(vm.dir).qmp, vmFiles(vm.dir).vnc])
      expect(await exists(file)).toBe(false)
  }, 30_000)
})
