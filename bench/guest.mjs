#!/usr/bin/env node
// P5: `exec true` round trip on a running tiny guest through the pooled ssh2 transport (and
// through GuestOps.exec, the `exec` tool's own path with its guest-side timeout wrapper) against
// OpenSSH's `ssh` reusing one ControlMaster connection (target ≤ 1.5×), a fresh `ssh` per call,
// and `stoat exec` as a whole process. Calls alternate between the ways, medians are compared.
// P6 (copy throughput) lives in bench/guest-copy.mjs.
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
// effect as core resolves it (the workspace root has no copy of its own).
const { Effect, Exit, Scope } = await import(
  new URL("../packages/core/node_modules/effect/dist/esm/index.js", import.meta.url).href
)
import { layoutOf, makeGuestOps, BUNDLED_GUESTS } from "../packages/core/dist/index.js"
import { makeGuestTransport } from "../packages/core/dist/ssh/index.js"

const runs = Number(process.env.RUNS ?? 30)
const bin = fileURLToPath(new URL("../packages/cli/bin/run.js", import.meta.url))
const tinyCache = process.env.STOAT_TINY_CACHE ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const time = async (fn) => {
  const started = process.hrtime.bigint()
  await fn()
  return Number(process.hrtime.bigint() - started) / 1e6
}

const p5 = async () => {
  const home = mkdtempSync(join(tmpdir(), "stoat-bench-guest-"))
  const env = { ...process.env, STOAT_HOME: home, STOAT_TINY_CACHE: tinyCache }
  const stoat = (...args) => {
    const result = spawnSync(process.execPath, [bin, ...args], { env, encoding: "utf8" })
    if (result.status !== 0) throw new Error(`stoat ${args.join(" ")}: ${result.stderr}${result.stdout}`)
    return result.stdout
  }
  const vm = "p5"
  stoat("create", vm, "--image", "tiny", "--agent-access", "exec")
  stoat("up", vm, "--wait")
  const scope = Effect.runSync(Scope.make())
  const control = join(home, "cm.sock")
  try {
    const port = JSON.parse(stoat("--json", "get", vm).trim().split("\n").at(-1)).data.vm.ssh_port
    const key = layoutOf(home).clientKey
    const target = { vm, port, user: "root", privateKeyPath: key }
    const transport = await Effect.runPromise(Scope.extend(makeGuestTransport(), scope))
    const ops = makeGuestOps(transport)
    const session = {
      vm,
      target,
      guest: { ...BUNDLED_GUESTS.find((guest) => guest.name === "tiny"), source: "bundled" }
    }
    const sshBase = [
      "-p",
      String(port),
      "-i",
      key,
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "-o",
      "LogLevel=ERROR",
      "-o",
      "BatchMode=yes"
    ]
    const master = ["-o", "ControlMaster=auto", "-o", `ControlPath=${control}`, "-o", "ControlPersist=120"]
    const ssh = (extra) => {
      const result = spawnSync("ssh", [...sshBase, ...extra, "root@127.0.0.1", "true"], { encoding: "utf8" })
      if (result.status !== 0) throw new Error(`ssh: ${result.stderr}`)
    }
    const ways = {
      pooled: () => Effect.runPromise(transport.exec(target, ["true"])),
      guestOps: () => Effect.runPromise(ops.exec(session, { argv: ["true"], timeoutSeconds: 60 })),
      controlMaster: async () => ssh(master),
      freshSsh: async () => ssh([]),
      stoatExec: async () => stoat("exec", vm, "true")
    }
    // Warm every way once: the pooled connection and the ControlMaster are dialled here.
    for (const run of Object.values(ways)) await run()
    const samples = Object.fromEntries(Object.keys(ways).map((name) => [name, []]))
    for (let i = 0; i < runs; i++) for (const [name, run] of Object.entries(ways)) samples[name].push(await time(run))
    const p50 = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values)]))
    const ms = (value) => `${value.toFixed(1)} ms`
    const ratio = (a, b) => `${(a / b).toFixed(2)}×`
    console.log(`P5 exec true round trip, p50 of ${runs} (tiny guest, alternating):`)
    console.log(
      `    pooled ssh2 transport ${ms(p50.pooled)}; ssh with ControlMaster reuse ${ms(p50.controlMaster)}; ratio ${ratio(p50.pooled, p50.controlMaster)} (target ≤ 1.5×)`
    )
    console.log(
      `    GuestOps.exec (the exec tool's path, timeout wrapper) ${ms(p50.guestOps)}; ratio to ControlMaster ${ratio(p50.guestOps, p50.controlMaster)}`
    )
    console.log(`    fresh ssh per call ${ms(p50.freshSsh)}: pooled is ${ratio(p50.freshSsh, p50.pooled)} faster`)
    console.log(
      `    whole \`stoat exec\` process ${ms(p50.stoatExec)}; ratio to fresh ssh ${ratio(p50.stoatExec, p50.freshSsh)}`
    )
  } finally {
    spawnSync("ssh", ["-o", `ControlPath=${control}`, "-O", "exit", "root@127.0.0.1"], { stdio: "ignore" })
    await Effect.runPromise(Scope.close(scope, Exit.void))
    spawnSync(process.execPath, [bin, "down", vm], { env, stdio: "ignore" })
    rmSync(home, { recursive: true, force: true })
  }
}

await p5()
