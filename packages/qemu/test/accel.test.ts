/**
 * The accelerator decision against fake `qemu-system-x86_64` programs put first on PATH: each
 * misbehaves under `-accel kvm` the way a broken KVM host does and hands anything else to the
 * real QEMU, so every case ends in a verdict (and, for starts, a VM) that really ran. The real
 * tiny guest kernel is what the kernel probe boots. Holds on hosts with, without and with a
 * broken /dev/kvm, because the fakes never let the real QEMU use KVM.
 */
import { execFileSync } from "node:child_process"
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type BootPlan, isProcessAlive } from "@stoat/core"
import { AccelCache, PROBE_MARKER, PROBE_NAME, probeKvm } from "../src/accel.js"
import { vmFiles } from "../src/argv.js"
import { waitForExit } from "../src/lifecycle.js"
import { buildTinyGuest, type TinyGuestImage } from "../src/tiny/build.js"
import { call, ok, sshBannerOnceReady, requireQemu, tinyCacheDir, tinyGuestPlan } from "./support.js"

const realQemu = () => execFileSync("sh", ["-c", "command -v qemu-system-x86_64"], { encoding: "utf8" }).trim()

/**
 * A fake QEMU: `kvmProbe` is what it does for the accelerator probe under -accel kvm,
 * `kvmVm` what it does for a VM under -accel kvm; everything else runs the real QEMU.
 * "tcg" swaps the accelerator (a KVM that works, simulated), "hang" sleeps silently,
 * "internal" prints KVM's internal error and stays paused, "exit" fails at once,
 * "pause" runs it under TCG with -S (the CPUs never run: silent on every host, with or without
 * /dev/kvm), "marker" answers the probe without running anything.
 */
type Behaviour = "tcg" | "hang" | "internal" | "exit" | "pause" | "marker"

const fakeQemu = async (
  dir: string,
  behaviour: { readonly kvmProbe: Behaviour; readonly kvmVm: Behaviour },
  log: string
) => {
  const act = (what: Behaviour) =>
    ({
      tcg: `swap "$@"`,
      hang: "exec sleep 60",
      internal: `echo "KVM internal error. Suberror: 1" >&2; echo "emulation failure" >&2; exec sleep 60`,
      exit: `echo "qemu-system-x86_64: -accel kvm: Could not access KVM kernel module: No such file or directory" >&2; exit 1`,
      pause: `swap "$@" -S`,
      marker: `echo ${PROBE_MARKER}; exit 0`
    })[what]
  const script = `#!/bin/bash
REAL=${JSON.stringify(realQemu())}
echo "$*" >> ${JSON.stringify(log)}
kvm=; probe=
for a in "$@"; do [ "$a" = kvm ] && kvm=1; [ "$a" = ${PROBE_NAME} ] && probe=1; done
swap() { local out=(); for a in "$@"; do [ "$a" = kvm ] && a=tcg; out+=("$a"); done; set -- "\${out[@]}"; exec "$REAL" "$@"; }
if [ -z "$kvm" ]; then exec "$REAL" "$@"; fi
if [ -n "$probe" ]; then ${act(behaviour.kvmProbe)}; fi
${act(behaviour.kvmVm)}
`
  await mkdir(dir, { recursive: true })
  const path = join(dir, "qemu-system-x86_64")
  await writeFile(path, script)
  await chmod(path, 0o755)
  return path
}

describe("accelerator probe", () => {
  let image: TinyGuestImage
  let scratch: string
  beforeAll(async () => {
    requireQemu()
    image = await buildTinyGuest({ cacheDir: join(tinyCacheDir, "debs"), outDir: join(tinyCacheDir, "image") })
    scratch = await mkdtemp(join(tmpdir(), "stoat-accel-"))
  }, 600_000)
  afterAll(() => rm(scratch, { recursive: true, force: true }))

  const fake = (name: string, kvmProbe: Behaviour) =>
    fakeQemu(join(scratch, name), { kvmProbe, kvmVm: kvmProbe }, join(scratch, `${name}.log`))

  it("boots the guest kernel to its init's marker when KVM runs it", async () => {
    // Under a working KVM this is under a second; the fake runs it under TCG, so allow for that.
    const verdict = await probeKvm(await fake("works", "tcg"), { kernel: image.kernel, timeoutMs: 60_000 })
    expect(verdict).toMatchObject({ accel: "kvm", source: "kernel" })
    expect(verdict.detail).toMatch(/^KVM works \(a 64-bit guest kernel booted in [\d.]+ s\)$/)
  }, 90_000)

  it("runs the long-mode payload when no kernel is built, and says it is the weaker check", async () => {
    const verdict = await probeKvm(await fake("payload", "tcg"), { timeoutMs: 30_000 })
    expect(verdict).toMatchObject({ accel: "kvm", source: "payload" })
    expect(verdict.detail).toMatch(/64-bit test payload; no guest kernel was tried yet/)
  }, 60_000)

  it("a guest that hangs silently under KVM means TCG: no console output", async () => {
    const verdict = await probeKvm(await fake("hang", "hang"), { kernel: image.kernel, timeoutMs: 1_500 })
    expect(verdict).toMatchObject({ accel: "tcg", source: "kernel" })
    expect(verdict.detail).toMatch(/^KVM present but a 64-bit guest does not run: no console output in 2 s/)
  })

  it("KVM's internal error means TCG, without waiting out the deadline", async () => {
    const started = Date.now()
    const verdict = await probeKvm(await fake("internal", "internal"), { kernel: image.kernel, timeoutMs: 30_000 })
    expect(verdict.accel).toBe("tcg")
    expect(verdict.detail).toMatch(/^KVM present but a 64-bit guest does not run: KVM internal error/)
    // Not a timing assertion on the machine's speed: the fake sleeps 60 s, so only an early stop gets here first.
    expect(Date.now() - started).toBeLessThan(30_000)
  })

  it("QEMU exiting at once under KVM means TCG, with QEMU's own words", async () => {
    const verdict = await probeKvm(await fake("exit", "exit"), { kernel: image.kernel })
    expect(verdict.accel).toBe("tcg")
    expect(verdict.detail).toMatch(
      /^KVM unusable \(-accel kvm: Could not access KVM kernel module: No such file or directory\)/
    )
  })

  it("a truncated, foreign or stale cache file is no verdict: it probes again and rewrites it", async () => {
    const qemu = await fake("cache", "exit")
    const file = join(scratch, "accel.json")
    const cache = new AccelCache(file)
    for (const content of [
      "",
      '{"accel":',
      "null",
      "42",
      JSON.stringify({ accel: "kvm", detail: "old", source: "kernel", boot: "another-boot", qemu })
    ]) {
      await writeFile(file, content)
      expect(await cache.read(qemu)).toBeUndefined()
      const verdict = await cache.verdict(qemu, image.kernel)
      expect(verdict).toMatchObject({ accel: "tcg", source: "kernel" })
      expect(await cache.read(qemu)).toEqual(verdict)
    }
  })

  it("CPUs that never run (-S) mean TCG", async () => {
    const verdict = await probeKvm(await fake("paused", "pause"), { kernel: image.kernel, timeoutMs: 1_500 })
    expect(verdict.accel).toBe("tcg")
  })
})

describe("starting a VM when KVM passes the probe but cannot run it", () => {
  let image: TinyGuestImage
  let root: string
  let bin: string
  let plan: BootPlan
  const savedPath = process.env["PATH"]
  const savedAccel = process.env["STOAT_ACCEL"]

  beforeAll(async () => {
    requireQemu()
    image = await buildTinyGuest({ cacheDir: join(tinyCacheDir, "debs"), outDir: join(tinyCacheDir, "image") })
    root = await mkdtemp(join(tmpdir(), "stoat-accel-start-"))
    bin = join(root, "bin")
    plan = await tinyGuestPlan(root, image, "kvm_victim")
  }, 600_000)

  const killVm = async () => {
    const pid = Number.parseInt(await readFile(vmFiles(plan.vm.dir).pidfile, "utf8").catch(() => ""), 10)
    if (pid > 0 && isProcessAlive(pid)) {
      process.kill(pid, "SIGKILL")
      // Gone before the next test starts this VM again (a killed QEMU takes a moment to go under load).
      await Effect.runPromise(waitForExit(pid, plan.vm, 30_000))
    }
  }
  afterEach(async () => {
    await killVm()
    await rm(join(root, ".accel-probe.json"), { force: true })
    process.env["PATH"] = savedPath
    if (savedAccel === undefined) delete process.env["STOAT_ACCEL"]
    else process.env["STOAT_ACCEL"] = savedAccel
  })
  afterAll(() => rm(root, { recursive: true, force: true }))

  const useFake = async (kvmVm: Behaviour) => {
    const log = join(root, `${kvmVm}.log`)
    await fakeQemu(bin, { kvmProbe: "marker", kvmVm }, log)
    process.env["PATH"] = `${bin}:${savedPath ?? ""}`
    process.env["STOAT_ACCEL"] = "auto"
    return log
  }
  const cachedVerdict = async () =>
    JSON.parse(await readFile(join(root, ".accel-probe.json"), "utf8")) as {
      accel: string
      source: string
      detail: string
    }

  for (const [kvmVm, reason] of [
    ["pause", /no console output in 4 s/],
    ["exit", /QEMU failed under KVM: .*Could not access KVM kernel module/]
  ] as const) {
    it(`restarts under TCG when the VM ${kvmVm === "pause" ? "stays silent" : "fails at once"} under KVM, and remembers`, async () => {
      const log = await useFake(kvmVm)
      const started = await ok(root, (h) => h.start(plan))
      expect(started).toMatchObject({ running: true, accel: "tcg" })
      expect(started.notice).toMatch(reason)
      expect(started.notice).toMatch(/restarted it under TCG/)
      expect(await readFile(`/proc/${started.pid}/cmdline`, "utf8")).toContain("-accel\0tcg\0")
      await sshBannerOnceReady(root, plan.vm, plan.sshPort, 120_000)
      const verdict = await cachedVerdict()
      expect(verdict).toMatchObject({ accel: "tcg", source: "start" })
      expect(verdict.detail).toMatch(reason)

      // The next start goes to TCG directly: no probe, no KVM attempt.
      await ok(root, (h) => h.stop(plan.vm, { graceMs: 0 }))
      await writeFile(log, "")
      const again = await ok(root, (h) => h.start(plan))
      expect(again).toMatchObject({ accel: "tcg" })
      expect(again.notice).toBeUndefined()
      expect(await readFile(log, "utf8")).not.toMatch(/-accel kvm/)
      const doctor = await ok(root, (h) => h.acceleration)
      expect(doctor.accel).toBe("tcg")
      expect(doctor.detail).toMatch(/does not run.*\(STOAT_ACCEL=auto\)$/)
    }, 300_000)
  }

  it("STOAT_ACCEL=kvm refuses to fall back and says why", async () => {
    await useFake("pause")
    process.env["STOAT_ACCEL"] = "kvm"
    const result = await call(root, (h) => h.start(plan))
    expect(Either.isLeft(result) && result.left.code).toBe("qemu_start_failed")
    expect(Either.isLeft(result) && result.left.message).toMatch(
      /did not run under KVM \(no console output in 4 s\); STOAT_ACCEL=kvm forbids/
    )
    expect((await ok(root, (h) => h.status(plan.vm))).running).toBe(false)
  }, 120_000)

  it("STOAT_ACCEL=tcg never touches KVM, and a bad value is refused by name", async () => {
    const log = await useFake("hang")
    process.env["STOAT_ACCEL"] = "tcg"
    expect(await ok(root, (h) => h.start(plan))).toMatchObject({ accel: "tcg" })
    expect(await readFile(log, "utf8")).not.toMatch(/-accel kvm/)
    expect((await ok(root, (h) => h.acceleration)).detail).toMatch(/^STOAT_ACCEL=tcg/)
    await killVm()
    process.env["STOAT_ACCEL"] = "fast"
    const bad = await call(root, (h) => h.acceleration)
    expect(Either.isLeft(bad) && bad.left.message).toBe('STOAT_ACCEL must be auto, kvm or tcg (got "fast")')
  }, 120_000)
})
