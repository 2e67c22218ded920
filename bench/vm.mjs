#!/usr/bin/env node
// P4: `stoat up --wait` of the tiny guest against a raw QEMU boot of the same guest (below).
// P7: `stoat clone` of a stopped VM with a 1 GiB and an 8 GiB disk (target ≤ 300 ms, independent of size).
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir, homedir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import {
  readTinyGuest,
  tinyQemuArgs,
  TINY_SSHD_MARKER,
  waitForConsoleLine,
  waitForTinyGuestSsh
} from "../packages/qemu/dist/tiny/index.js"
import { qemuArgs } from "../packages/qemu/dist/argv.js"

const runs = Number(process.env.RUNS ?? 5)
const bin = fileURLToPath(new URL("../packages/cli/bin/run.js", import.meta.url))
const tinyCache = process.env.STOAT_TINY_CACHE ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
const home = mkdtempSync(join(tmpdir(), "stoat-bench-vm-"))
const env = { ...process.env, STOAT_HOME: home, STOAT_TINY_CACHE: tinyCache }
const stoat = (...args) => {
  const result = spawnSync(process.execPath, [bin, ...args], { env, encoding: "utf8" })
  if (result.status !== 0) throw new Error(`stoat ${args.join(" ")}: ${result.stderr}${result.stdout}`)
  return result.stdout
}
const time = async (fn) => {
  const started = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - started) / 1e6
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

stoat("pull", "tiny")
const image = await readTinyGuest(join(tinyCache, "image"))
if (!image) throw new Error(`no tiny build under ${tinyCache}/image`)

// P4: a created, stopped tiny VM → `stoat up --wait` (SSH answering), against a raw QEMU start of
// the same guest (its kernel, its initrd with keys, its disk and share) → the guest's own console
// line that sshd listens (the tiny guest's own minimal argv: qboot, no VGA), and with stoat's exact
// argv. Alternating runs, medians. Also `stoat down`, and create + up as a whole.
const upWait = []
const down = []
const createUp = []
const rawListening = []
const rawBanner = []
const rawStoatArgv = []
for (let i = 0; i < runs; i++) {
  const name = `p4-${i}`
  createUp.push(
    await time(async () => {
      stoat("create", name, "--image", "tiny")
      stoat("up", name, "--wait")
    })
  )
  down.push(await time(async () => stoat("down", name)))
  upWait.push(await time(async () => stoat("up", name, "--wait")))
  down.push(await time(async () => stoat("down", name)))

  const vmDir = join(home, name)
  for (const until of ["listening", "banner"]) {
    const dir = mkdtempSync(join(tmpdir(), "stoat-raw-"))
    const port = 2400 + i
    const consoleLog = join(dir, "console.log")
    const args = tinyQemuArgs({
      image,
      initrd: join(vmDir, "initrd.img"),
      ramMb: 256,
      cpus: 1,
      sshPort: port,
      vmDir: dir,
      disk: join(vmDir, "disk.qcow2"),
      workShare: join(home, "shared", name)
    })
    const sample = await time(async () => {
      const qemu = spawn("qemu-system-x86_64", args, { stdio: "ignore" })
      try {
        if (until === "listening")
          await waitForConsoleLine(consoleLog, TINY_SSHD_MARKER, { timeoutMs: 120_000, intervalMs: 10 })
        else await waitForTinyGuestSsh({ port, consoleLog, consoleOffset: 0, timeoutMs: 120_000 })
      } finally {
        qemu.kill("SIGKILL")
        await new Promise((resolve) => qemu.once("exit", resolve))
      }
    })
    ;(until === "listening" ? rawListening : rawBanner).push(sample)
    rmSync(dir, { recursive: true, force: true })
  }
  // The same, with the very argv stoat gave QEMU for this VM (its boot plan in boot.json: SeaBIOS,
  // VGA for screenshots, the VM generation ID forks need), started by hand: stoat's own overhead.
  const { plan } = JSON.parse(readFileSync(join(vmDir, "boot.json"), "utf8"))
  const dir = mkdtempSync(join(tmpdir(), "stoat-raw-"))
  const consoleLog = join(dir, "console.log")
  // The plan names the disk inside the VM folder; the stand-in folder links to the real one.
  if (plan.disk !== undefined) symlinkSync(join(vmDir, plan.disk), join(dir, plan.disk))
  const own = qemuArgs(
    { ...plan, vm: { name: plan.vm.name, dir }, sshPort: 2400 + i },
    { accel: "tcg", initrd: join(vmDir, "initrd.img"), daemonize: false }
  )
  rawStoatArgv.push(
    await time(async () => {
      const qemu = spawn("qemu-system-x86_64", own, { stdio: "ignore" })
      try {
        await waitForConsoleLine(consoleLog, TINY_SSHD_MARKER, { timeoutMs: 120_000, intervalMs: 10 })
      } finally {
        qemu.kill("SIGKILL")
        await new Promise((resolve) => qemu.once("exit", resolve))
      }
    })
  )
  rmSync(dir, { recursive: true, force: true })
}
const ms = (values) => `${median(values).toFixed(0)} ms`
console.log(
  `P4 stoat up --wait (tiny, created), median of ${runs}: ${ms(upWait)} (target ≤ 3000 ms); raw qemu → console "sshd listening" ${ms(rawListening)}; ratio ${(median(upWait) / median(rawListening)).toFixed(2)}× (target ≤ 1.25×)`
)
console.log(
  `    raw qemu with stoat's own argv (SeaBIOS, VGA, vmgenid) → "sshd listening" ${ms(rawStoatArgv)}; stoat's overhead over it ${(median(upWait) / median(rawStoatArgv)).toFixed(2)}×`
)
console.log(
  `    raw qemu → SSH banner ${ms(rawBanner)}; stoat create + up --wait ${ms(createUp)}; stoat down, median of ${down.length}: ${ms(down)} (target ≤ 2500 ms)`
)

for (const size of ["1G", "8G"]) {
  stoat("create", `src-${size}`, "--image", "tiny", "--disk", size)
  const samples = []
  for (let i = 0; i < runs; i++)
    samples.push(await time(async () => stoat("clone", `src-${size}`, `clone-${size}-${i}`)))
  // The operation's own time, from the audit line stoat.log keeps per call (excludes CLI process startup).
  const opTimes = readFileSync(join(home, "logs", "stoat.log"), "utf8")
    .split("\n")
    .filter((line) => line.includes("op=vm.clone") && line.includes(`vm=src-${size}`))
    .map((line) => Number(/ ms=(\d+)/.exec(line)?.[1]))
  console.log(
    `P7 clone of a ${size} disk VM, median of ${runs}: operation ${median(opTimes)} ms, whole \`stoat clone\` process ${median(samples).toFixed(0)} ms (target ≤ 300 ms)`
  )
}
rmSync(home, { recursive: true, force: true })
