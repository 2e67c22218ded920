#!/usr/bin/env node
// P3: wall time of `stoat ls --json` and `stoat --version`, median of N runs, against `node -e 0`
// measured interleaved in the same run. Targets (SPEC §4 P3): ls ≤ 150 ms and ≤ 3× node.
import { spawnSync } from "node:child_process"
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const runs = Number(process.env.RUNS ?? 25)
const bin = fileURLToPath(new URL("../packages/cli/bin/run.js", import.meta.url))
const home = mkdtempSync(join(tmpdir(), "stoat-bench-"))
// A populated root: a few VMs and a broken one, so ls does real work.
for (let i = 0; i < 5; i++) {
  mkdirSync(join(home, `vm${i}`))
  writeFileSync(
    join(home, `vm${i}`, "vm.toml"),
    `name = "vm${i}"\nos = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\nsshport = ${2200 + i}\n`
  )
}
mkdirSync(join(home, "broken"))
writeFileSync(join(home, "broken", "vm.toml"), "sshport = 2299\n[[[")

// The last case shows what the V8 code cache of the bundles (packages/cli/bin/compile-cache.js) saves.
const cases = {
  "node -e 0": [process.execPath, ["-e", "0"]],
  "stoat --version": [process.execPath, [bin, "--version"]],
  "stoat ls --json": [process.execPath, [bin, "ls", "--json"]],
  "ls, no code cache": [process.execPath, [bin, "ls", "--json"], { STOAT_COMPILE_CACHE: "0" }]
}
const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]))
for (let i = 0; i < runs; i++) {
  for (const [name, [cmd, args, env = {}]] of Object.entries(cases)) {
    const started = process.hrtime.bigint()
    const result = spawnSync(cmd, args, {
      env: { ...process.env, STOAT_HOME: home, ...env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    samples[name].push(Number(process.hrtime.bigint() - started) / 1e6)
    if (result.status !== 0) throw new Error(`${name} failed: ${result.stderr}`)
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const base = median(samples["node -e 0"])
console.log(`P3 CLI startup, median of ${runs} interleaved runs`)
for (const [name, values] of Object.entries(samples)) {
  const ms = median(values)
  console.log(`${name.padEnd(18)} ${ms.toFixed(1).padStart(7)} ms  ${(ms / base).toFixed(2)}× node`)
}
const ls = median(samples["stoat ls --json"])
console.log(`target (SPEC P3): ls ≤ 150 ms and ≤ 3× node → ${ls <= 150 && ls / base <= 3 ? "met" : "NOT met"}`)
