#!/usr/bin/env node
// Builds the tiny guest and boots it a few times, printing timings.
//
//   node packages/qemu/scripts/boot-tiny.mjs [--boots N] [--cache DIR] [--fresh] [--keep]
//
// Uses the compiled package (dist/, after `pnpm --filter @stoat/qemu build`); when run through
// tsx it falls back to the TypeScript sources. --fresh builds into a new empty output directory
// (the .deb cache is kept); --keep leaves the scratch VM directory for inspection.
import { execFileSync, spawn } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"

// dist/ may predate the sources; prefer whichever has everything this script uses.
const loadTiny = async () => {
  const dist = await import("../dist/tiny/index.js").catch((e) => e)
  if (!(dist instanceof Error) && typeof dist.waitForTinyGuestSsh === "function") return dist
  try {
    return await import("../src/tiny/index.ts")
  } catch {
    const why = dist instanceof Error ? dist.message : "dist/ is out of date"
    throw new Error(`cannot load the tiny-guest builder (${why}); run \`pnpm --filter @stoat/qemu build\` first`)
  }
}
const tiny = await loadTiny()

const { values } = parseArgs({
  options: {
    boots: { type: "string", default: "5" },
    // Same layout as the tests: $STOAT_TEST_CACHE/tiny/{debs,image}.
    cache: {
      type: "string",
      default: join(process.env.STOAT_TEST_CACHE ?? join(homedir(), ".cache", "stoat-test"), "tiny")
    },
    fresh: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
    ram: { type: "string", default: "256" }
  }
})

const cacheDir = join(values.cache, "debs")
const vmDir = mkdtempSync(join(tmpdir(), "stoat-tiny-"))
const outDir = values.fresh ? join(vmDir, "image") : join(values.cache, "image")

let t = performance.now()
const image = await tiny.buildTinyGuest({ cacheDir, outDir, onStage: (m) => console.error(`  [build] ${m}`) })
console.log(`build: ${((performance.now() - t) / 1000).toFixed(2)} s  version ${image.version}`)

execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(vmDir, "id"), "-C", "boot-tiny"])
execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(vmDir, "hostkey"), "-C", "host"])
await tiny.toDropbearKey(join(vmDir, "hostkey"), join(vmDir, "hostkey.dropbear"))
const initrd = join(vmDir, "initrd.img")
await tiny.writeVmInitrd({
  baseInitrd: image.initrd,
  out: initrd,
  authorizedKeys: readFileSync(join(vmDir, "id.pub"), "utf8"),
  hostKeyDropbear: readFileSync(join(vmDir, "hostkey.dropbear")),
  hostname: "boot-tiny"
})
const disk = join(vmDir, "disk.qcow2")
execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", disk, "1G"])
const work = join(vmDir, "work")
mkdirSync(work)
writeFileSync(join(work, "from-host"), "hi from host\n")

const port = await freePort()
const ssh = (cmd) =>
  execFileSync(
    "ssh",
    [
      "-i",
      join(vmDir, "id"),
      "-p",
      String(port),
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "-o",
      "BatchMode=yes",
      "-o",
      "LogLevel=ERROR",
      "root@127.0.0.1",
      cmd
    ],
    { encoding: "utf8" }
  )

const bootTimes = []
const offTimes = []
for (let i = 0; i < Number(values.boots); i++) {
  const args = tiny.tinyQemuArgs({
    image,
    initrd,
    ramMb: Number(values.ram),
    cpus: 1,
    sshPort: port,
    vmDir,
    disk,
    workShare: work
  })
  const consoleOffset = existsSync(join(vmDir, "console.log")) ? statSync(join(vmDir, "console.log")).size : 0
  t = performance.now()
  const child = spawn("qemu-system-x86_64", args, { stdio: ["ignore", "inherit", "inherit"] })
  let exited = false
  const exitP = new Promise((r) =>
    child.on("exit", () => {
      exited = true
      r()
    })
  )
  await tiny.waitForTinyGuestSsh({
    port,
    consoleLog: join(vmDir, "console.log"),
    consoleOffset,
    timeoutMs: 90_000,
    isAlive: () => !exited
  })
  const boot = (performance.now() - t) / 1000
  bootTimes.push(boot)
  const out = ssh(
    i === 0
      ? "uname -r; cat /mnt/work/from-host; cat /data/count 2>/dev/null; echo $(( $(cat /data/count 2>/dev/null || echo 0) + 1 )) > /data/count"
      : "cat /data/count; echo $(( $(cat /data/count) + 1 )) > /data/count"
  )
  t = performance.now()
  await tiny.qmpCommands(join(vmDir, "qmp.sock"), [{ execute: "system_powerdown" }])
  let timer
  await Promise.race([
    exitP,
    new Promise((_, rej) => {
      timer = setTimeout(() => rej(new Error("VM did not power off in 60 s")), 60_000)
    })
  ])
  clearTimeout(timer)
  const off = (performance.now() - t) / 1000
  offTimes.push(off)
  console.log(
    `boot ${i + 1}: ssh banner ${boot.toFixed(2)} s, poweroff ${off.toFixed(2)} s  | ${out.trim().replace(/\n/g, " | ")}`
  )
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
console.log(`median boot→banner ${median(bootTimes).toFixed(2)} s, median poweroff ${median(offTimes).toFixed(2)} s`)
if (values.keep) console.log(`kept ${vmDir}`)
else rmSync(vmDir, { recursive: true, force: true })

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.on("error", reject)
    srv.listen(0, "127.0.0.1", () => {
      const p = srv.address().port
      srv.close(() => resolve(p))
    })
  })
}
