#!/usr/bin/env node
// Issue #13, in one run and side by side, for the 256 MiB tiny guest under this host's accelerator:
//   `stoat fork <vm>@<checkpoint> <name>` → SSH answering (target ≤ 1.0 s median) against the cold
//   `stoat up --wait` of the same guest in the same run (target ≤ 0.4×);
//   `stoat checkpoint` (target ≤ 2 s) and how long the source was paused (QEMU's STOP → RESUME
//   events; the checkpoint description promises well under a second);
//   five forks with `--count 5`: total time and host RSS per fork.
// Times are whole CLI processes (what a person waits for); the operation's own figures are beside them.
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const runs = Number(process.env.RUNS ?? 5)
const bin = fileURLToPath(new URL("../packages/cli/bin/run.js", import.meta.url))
const tinyCache = process.env.STOAT_TINY_CACHE ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
const home = mkdtempSync(join(tmpdir(), "stoat-bench-fork-"))
const env = { ...process.env, STOAT_HOME: home, STOAT_TINY_CACHE: tinyCache }
const stoat = (...args) => {
  const started = process.hrtime.bigint()
  const result = spawnSync(process.execPath, [bin, "--json", ...args], { env, encoding: "utf8" })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  const last = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}")
  if (!last.ok) throw new Error(`stoat ${args.join(" ")}: ${JSON.stringify(last.error)}\n${result.stderr}`)
  return { ms, data: last.data }
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const ms = (values) => `${median(values).toFixed(0)} ms`
const rssMb = (vm) => {
  const pid = readFileSync(join(home, vm, "qemu.pid"), "utf8").trim()
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024
}

const started = []
try {
  stoat("create", "src", "--image", "tiny")
  stoat("up", "src", "--wait")
  started.push("src")

  const checkpointWall = []
  const checkpointOp = []
  const paused = []
  for (let i = 0; i < runs; i++) {
    const { ms: wall, data } = stoat("checkpoint", "src", `c${i}`)
    checkpointWall.push(wall)
    checkpointOp.push(data.took_ms)
    paused.push(data.checkpoint.paused_ms)
  }
  const stateMb = stoat("checkpoint", "ls", "src").data.checkpoints[0].state_bytes / 1024 / 1024

  // Alternating, so both see the same host load: a fork to SSH answering, then a cold boot to SSH answering.
  const forkWall = []
  const forkReady = []
  const coldWall = []
  for (let i = 0; i < runs; i++) {
    const { ms: wall, data } = stoat("fork", "src@c0", `f${i}`)
    forkWall.push(wall)
    forkReady.push(data.forks[0].ready_ms)
    stoat("down", `f${i}`)
    // Created right before its boot: other data roots on this host may take a port meanwhile.
    stoat("create", `cold${i}`, "--image", "tiny")
    coldWall.push(stoat("up", `cold${i}`, "--wait").ms)
    stoat("down", `cold${i}`)
  }

  const many = stoat("fork", "src@c0", "many", "--count", "5")
  const names = many.data.forks.map((fork) => fork.vm.name)
  started.push(...names)
  const rss = names.map(rssMb)

  const ratio = median(forkWall) / median(coldWall)
  console.log(
    `fork → SSH answering, median of ${runs}: ${ms(forkWall)} (target ≤ 1000 ms; fork's own ready_ms ${ms(forkReady)})`
  )
  console.log(
    `cold stoat up --wait of the same guest, median of ${runs}: ${ms(coldWall)}; fork/cold ${ratio.toFixed(2)}× (target ≤ 0.4×)`
  )
  console.log(
    `stoat checkpoint of a 256 MiB guest, median of ${runs}: ${ms(checkpointWall)} (target ≤ 2000 ms; operation ${ms(checkpointOp)}); source paused ${ms(paused)} (max ${Math.max(...paused)} ms; promised well under 1000 ms); state ${stateMb.toFixed(1)} MiB`
  )
  console.log(
    `fork --count 5: ${many.ms.toFixed(0)} ms in all (operation ${many.data.took_ms} ms, slowest fork ready ${Math.max(...many.data.forks.map((fork) => fork.ready_ms))} ms); host RSS per fork ${(rss.reduce((a, b) => a + b, 0) / rss.length).toFixed(0)} MiB mean, ${Math.max(...rss).toFixed(0)} MiB max`
  )
} finally {
  for (const vm of started) spawnSync(process.execPath, [bin, "down", vm], { env })
  rmSync(home, { recursive: true, force: true })
}
