#!/usr/bin/env node
// P4: `stoat create` + `stoat up` of the tiny guest until SSH answers, against raw qemu-system-x86_64
// booting the same kernel + initrd to the SSH banner; medians of N alternating runs.
// P7: `stoat clone` of a stopped VM with a 1 GiB and an 8 GiB disk (target ≤ 300 ms, independent of size).
import { spawn, spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir, homedir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { tinyQemuArgs, readTinyGuest, waitForSshBanner } from "../packages/qemu/dist/tiny/index.js"

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

const stoatBoot = []
const rawBoot = []
for (let i = 0; i < runs; i++) {
  stoatBoot.push(
    await time(async () => {
      stoat("create", `p4-${i}`, "--image", "tiny")
      stoat("up", `p4-${i}`, "--wait")
    })
  )
  stoat("down", `p4-${i}`)
  const dir = mkdtempSync(join(tmpdir(), "stoat-raw-"))
  const port = 2400 + i
  rawBoot.push(
    await time(async () => {
      const qemu = spawn("qemu-system-x86_64", tinyQemuArgs({ image, initrd: image.initrd, ramMb: 256, cpus: 1, sshPort: port, vmDir: dir }), { stdio: "ignore" })
      await waitForSshBanner(port, { timeoutMs: 120_000 })
      qemu.kill("SIGKILL")
    })
  )
  rmSync(dir, { recursive: true, force: true })
}
const p4 = median(stoatBoot) / median(rawBoot)
console.log(`P4 boot to SSH, median of ${runs}: stoat create+up ${median(stoatBoot).toFixed(0)} ms, raw qemu ${median(rawBoot).toFixed(0)} ms, ratio ${p4.toFixed(2)}× (target ≤ 1.15×)`)

for (const size of ["1G", "8G"]) {
  stoat("create", `src-${size}`, "--image", "tiny", "--disk", size)
  const samples = []
  for (let i = 0; i < runs; i++) samples.push(await time(async () => stoat("clone", `src-${size}`, `clone-${size}-${i}`)))
  // The operation's own time, from the audit line stoat.log keeps per call (excludes CLI process startup).
  const opTimes = readFileSync(join(home, "logs", "stoat.log"), "utf8")
    .split("\n")
    .filter((line) => line.includes("op=vm.clone") && line.includes(`vm=src-${size}`))
    .map((line) => Number(/ ms=(\d+)/.exec(line)?.[1]))
  console.log(`P7 clone of a ${size} disk VM, median of ${runs}: operation ${median(opTimes)} ms, whole \`stoat clone\` process ${median(samples).toFixed(0)} ms (target ≤ 300 ms)`)
}
rmSync(home, { recursive: true, force: true })
