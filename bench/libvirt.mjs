#!/usr/bin/env node
// The libvirt provider against the QEMU provider, same tiny guest, same run, interleaved:
// `stoat up --wait` (start → SSH answers) and `stoat exec` round trips (a CLI process each, as a
// person runs them). Targets (issue #29): libvirt ≤ 1.3× QEMU for up, ≤ 1.2× for exec.
// ROUNDS (default 3) ups per provider, EXECS (default 10) execs per provider per round.
// STOAT_ACCEL is passed through (the providers then run under the same accelerator).
import { spawnSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const rounds = Number(process.env.ROUNDS ?? 3)
const execs = Number(process.env.EXECS ?? 10)
const bin = fileURLToPath(new URL("../packages/cli/bin/run.js", import.meta.url))
const home = mkdtempSync(join(tmpdir(), "stoat-bench-libvirt-"))
const env = {
  ...process.env,
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env.STOAT_TINY_CACHE ?? join(homedir(), ".cache", "stoat-test", "tiny-image"),
  NO_COLOR: "1"
}

const stoat = (...args) => {
  const started = process.hrtime.bigint()
  const result = spawnSync(process.execPath, [bin, ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8"
  })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  if (result.status !== 0)
    throw new Error(`stoat ${args.join(" ")} failed (${result.status}): ${result.stderr}${result.stdout}`)
  return ms
}

const vms = { qemu: "bq", libvirt: "bl" }
stoat("create", vms.qemu, "--image", "tiny", "--agent-access", "exec")
stoat("create", vms.libvirt, "--image", "tiny", "--agent-access", "exec", "--provider", "libvirt")
const samples = { up: { qemu: [], libvirt: [] }, exec: { qemu: [], libvirt: [] }, down: { qemu: [], libvirt: [] } }
try {
  for (let round = 0; round < rounds; round++) {
    // Alternate which provider goes first, so neither always meets a quieter machine.
    const order = round % 2 === 0 ? ["qemu", "libvirt"] : ["libvirt", "qemu"]
    for (const provider of order) {
      samples.up[provider].push(stoat("up", vms[provider], "--wait"))
      for (let i = 0; i < execs; i++) samples.exec[provider].push(stoat("exec", vms[provider], "--", "true"))
      samples.down[provider].push(stoat("down", vms[provider]))
    }
  }
} finally {
  for (const vm of Object.values(vms)) spawnSync(process.execPath, [bin, "down", vm], { env, stdio: "ignore" })
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
console.log(
  `libvirt vs qemu provider, tiny guest, STOAT_ACCEL=${process.env.STOAT_ACCEL ?? "auto"}; medians of ${rounds} ups and ${rounds * execs} execs each`
)
const targets = { up: 1.3, exec: 1.2, down: undefined }
for (const [what, byProvider] of Object.entries(samples)) {
  const qemu = median(byProvider.qemu)
  const libvirt = median(byProvider.libvirt)
  const ratio = libvirt / qemu
  const target = targets[what]
  console.log(
    `${what.padEnd(5)} qemu ${qemu.toFixed(0).padStart(6)} ms  libvirt ${libvirt.toFixed(0).padStart(6)} ms  ${ratio.toFixed(2)}×` +
      (target !== undefined ? `  (target ≤ ${target}×: ${ratio <= target ? "met" : "NOT met"})` : "")
  )
}
