#!/usr/bin/env node
// P6: `copy_to` of 64 MiB into a running tiny guest against `scp` of the same file to the same
// guest (target: copy_to throughput ≥ 0.8× scp's). Alternating rounds, medians. copy_to runs as
// `stoat cp` (the operation copy_to serves); its time is the operation's own, from the audit line
// stoat.log keeps per call (ssh connect + SFTP transfer, no CLI startup), and the whole process too.
// scp's is the whole process (its connect + transfer; OpenSSH 9 scp speaks SFTP to the guest).
import { spawnSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const runs = Number(process.env.RUNS ?? 5)
const MiB = 1024 * 1024
const size = 64 * MiB
const bin = fileURLToPath(new URL("../packages/cli/bin/run.js", import.meta.url))
const tinyCache = process.env.STOAT_TINY_CACHE ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
const home = mkdtempSync(join(tmpdir(), "stoat-bench-copy-"))
const env = { ...process.env, STOAT_HOME: home, STOAT_TINY_CACHE: tinyCache }
const vm = "p6"

const run = (program, args) => {
  const started = process.hrtime.bigint()
  const result = spawnSync(program, args, { env, encoding: "utf8" })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  if (result.status !== 0) throw new Error(`${program} ${args.join(" ")}: ${result.stderr}${result.stdout}`)
  return { ms, stdout: result.stdout }
}
const stoat = (...args) => run(process.execPath, [bin, ...args])
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const rate = (ms) => `${(size / MiB / (ms / 1000)).toFixed(1)} MiB/s`

/** The ms of the last audit line for this operation. */
const auditMs = (op) => {
  const lines = readFileSync(join(home, "logs", "stoat.log"), "utf8")
    .trim()
    .split("\n")
    .filter((line) => line.includes(`op=${op} `))
  return Number(/ ms=(\d+) /.exec(lines.at(-1))[1])
}

try {
  stoat("create", vm, "--image", "tiny", "--ram", "512")
  stoat("up", vm, "--wait")
  const file = join(home, "payload.bin")
  writeFileSync(file, randomBytes(size))
  const ssh = JSON.parse(stoat("--json", "ssh-command", vm).stdout).data.argv
  // ssh's options, as scp takes them: -P for the port, the same -o and -i, and the user@host destination.
  const port = ssh[ssh.indexOf("-p") + 1]
  const options = ssh.slice(1).filter((_, i, all) => all[i] !== "-p" && all[i - 1] !== "-p" && !all[i].includes("@"))
  const destination = ssh.at(-1)

  const copyOp = []
  const copyProcess = []
  const scp = []
  for (let i = 0; i < runs; i++) {
    const ours = stoat("cp", file, `${vm}:/tmp/stoat.bin`)
    copyProcess.push(ours.ms)
    copyOp.push(auditMs("guest.copy_to"))
    scp.push(run("scp", ["-q", "-P", port, ...options, file, `${destination}:/tmp/scp.bin`]).ms)
  }
  const check = stoat("exec", vm, "sh", "-c", "cmp /tmp/stoat.bin /tmp/scp.bin && echo same").stdout.trim()
  console.log(
    `P6 copy_to 64 MiB, median of ${runs}: operation ${median(copyOp).toFixed(0)} ms (${rate(median(copyOp))}); ` +
      `scp ${median(scp).toFixed(0)} ms (${rate(median(scp))}); throughput ratio ${(median(scp) / median(copyOp)).toFixed(2)}× (target ≥ 0.8×)`
  )
  console.log(
    `    whole \`stoat cp\` process ${median(copyProcess).toFixed(0)} ms (${rate(median(copyProcess))}), ratio ${(median(scp) / median(copyProcess)).toFixed(2)}×; files identical: ${check === "same"}`
  )
} finally {
  spawnSync(process.execPath, [bin, "down", vm], { env })
  rmSync(home, { recursive: true, force: true })
}
