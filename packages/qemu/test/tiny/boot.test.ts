/**
 * Builds the tiny guest (or reuses the cached build), boots it under TCG and checks SSH,
 * SFTP/scp, 9p, the persistent /data disk across a reboot, and both power-off paths.
 *
 * The build cache lives in $STOAT_TEST_CACHE/tiny (default ~/.cache/stoat-test/tiny) so only the
 * first run downloads packages. Needs qemu-system-x86_64, qemu-img, ssh, scp, ssh-keygen,
 * apt-get/dpkg-deb and xz on the host; a missing QEMU fails the suite rather than skipping it.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process"
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises"
import { createServer } from "node:net"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { BootPlan } from "@stoat/core"
import { qemuArgs } from "../../src/argv.js"
import { qmpExecute } from "../../src/qmp.js"
import { buildTinyGuest, toDropbearKey, writeVmInitrd, type TinyGuestImage } from "../../src/tiny/index.js"
import { sshBannerOnceReady } from "../support.js"

const execFileP = promisify(execFile)
// Same layout as test/support.ts: $STOAT_TEST_CACHE/tiny, shared with the lifecycle tests.
const cacheRoot = join(process.env["STOAT_TEST_CACHE"] ?? join(homedir(), ".cache", "stoat-test"), "tiny")

async function requireTool(tool: string, args: string[]): Promise<void> {
  try {
    await execFileP(tool, args)
  } catch (e) {
    const err = e as NodeJS.ErrnoException
    if (err.code === "ENOENT") {
      throw new Error(
        `${tool} is not installed: the tiny-guest boot test needs it (apt-get install qemu-system-x86 qemu-utils)`
      )
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.on("error", reject)
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address()
      const port = typeof addr === "object" && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

interface RunningVm {
  readonly child: ChildProcess
  readonly exited: Promise<number | null>
}

describe("tiny guest", () => {
  let image: TinyGuestImage
  let vmDir: string
  let initrd: string
  let disk: string
  let work: string
  let hostShare: string
  let key: string
  let port: number
  const running = new Set<ChildProcess>()

  beforeAll(async () => {
    await requireTool("qemu-system-x86_64", ["--version"])
    await requireTool("qemu-img", ["--version"])
    image = await buildTinyGuest({ cacheDir: join(cacheRoot, "debs"), outDir: join(cacheRoot, "image") })
    vmDir = await mkdtemp(join(tmpdir(), "stoat-tiny-test-"))
    key = join(vmDir, "id_test")
    await execFileP("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "stoat-test", "-f", key])
    await execFileP("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f", join(vmDir, "host_key")])
    initrd = join(vmDir, "initrd.img")
    await writeVmInitrd({
      baseInitrd: image.initrd,
      out: initrd,
      authorizedKeys: await readFile(`${key}.pub`, "utf8"),
      hostKeyDropbear: await toDropbearKey(await readFile(join(vmDir, "host_key"), "utf8")),
      hostname: "tiny-test"
    })
    disk = join(vmDir, "disk.qcow2")
    await execFileP("qemu-img", ["create", "-q", "-f", "qcow2", disk, "1G"])
    work = join(vmDir, "work")
    await mkdir(work)
    await writeFile(join(work, "from-host.txt"), "written on the host\n")
    hostShare = join(vmDir, "host")
    await mkdir(hostShare)
    await writeFile(join(hostShare, "readme.txt"), "read-only share\n")
    port = await freePort()
  }, 600_000)

  afterEach(async (ctx) => {
    // The guest's serial console is the only view of what went wrong inside it.
    if (ctx.task.result?.state === "fail" && vmDir) {
      const log = await readFile(join(vmDir, "console.log"), "utf8").catch(() => "(no console.log)")
      console.error(`guest console (tail):\n${log.slice(-4000)}`)
    }
  })

  afterAll(async () => {
    for (const c of running) if (c.exitCode === null && c.pid !== undefined) process.kill(c.pid, "SIGKILL")
    if (vmDir) await rm(vmDir, { recursive: true, force: true })
  })

  async function boot(): Promise<RunningVm> {
    // Stoat's own command line, kept in the foreground so the test sees QEMU's exit status.
    const plan: BootPlan = {
      vm: { name: "tiny-test", dir: vmDir },
      ramMb: 256,
      cpus: 1,
      sshPort: port,
      forwards: [],
      disk: "disk.qcow2",
      kernel: { path: image.kernel, initrd: image.initrd, append: image.kernelArgs },
      workShare: work,
      hostShare,
      display: "vnc"
    }
    const child = spawn("qemu-system-x86_64", qemuArgs(plan, { accel: "tcg", initrd, daemonize: false }), {
      stdio: ["ignore", "ignore", "pipe"]
    })
    running.add(child)
    let stderr = ""
    child.stderr?.on("data", (b: Buffer) => (stderr += b.toString()))
    const exited = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => {
        running.delete(child)
        if (code !== 0 && stderr) console.error(`qemu stderr: ${stderr}`)
        resolve(code)
      })
    )
    // The readiness below asks the pidfile whether QEMU runs: QMP answering means QEMU wrote it.
    await Effect.runPromise(
      qmpExecute(join(vmDir, "qmp.sock"), "query-status", undefined, { connectTimeoutMs: 60_000 })
    )
    return { child, exited }
  }

  const sshOpts = () => [
    "-i",
    key,
    "-o",
    "StrictHostKeyChecking=no",
    "-o",
    "UserKnownHostsFile=/dev/null",
    "-o",
    "BatchMode=yes",
    "-o",
    "LogLevel=VERBOSE",
    "-o",
    "ConnectTimeout=20"
  ]

  async function ssh(cmd: string): Promise<string> {
    try {
      const { stdout } = await execFileP("ssh", [...sshOpts(), "-p", String(port), "root@127.0.0.1", cmd], {
        timeout: 60_000
      })
      return stdout
    } catch (e) {
      // The exit status and both streams, so a failure says whether ssh, the guest's sshd or the command failed.
      const err = e as { code?: unknown; signal?: unknown; stdout?: string; stderr?: string }
      throw new Error(
        `ssh ${JSON.stringify(cmd)} failed: exit ${String(err.code)}, signal ${String(err.signal)}, stdout ${JSON.stringify(err.stdout)}, stderr ${JSON.stringify(err.stderr)}`
      )
    }
  }

  /** Stoat's readiness (it fails at once when QEMU's pidfile no longer names a running QEMU), then sshd's banner. */
  const ready = (): Promise<string> => sshBannerOnceReady(vmDir, { name: "tiny-test", dir: vmDir }, port, 120_000)

  async function exitsWithin(vm: RunningVm, ms: number): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`QEMU still running ${ms / 1000} s after power-off`)), ms)
    })
    try {
      return await Promise.race([vm.exited, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  it("boots to SSH, serves SFTP and 9p, writes /data, and powers off on system_powerdown", async () => {
    const vm = await boot()
    const banner = await ready()
    expect(banner).toMatch(/^SSH-2\.0-dropbear/)

    const out = await ssh("uname -r; echo hello > /data/x; cat /data/x; hostname")
    const lines = out.trim().split("\n")
    expect(lines[0]).toMatch(/^\d+\.\d+\.\d+.*amd64$/)
    expect(lines[1]).toBe("hello")
    expect(lines[2]).toBe("tiny-test")

    // OpenSSH 9's scp speaks SFTP, so this exercises dropbear's sftp subsystem both ways.
    const payload = join(vmDir, "payload.bin")
    const data = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 31) % 251))
    await writeFile(payload, data)
    await execFileP("scp", [...sshOpts(), "-P", String(port), payload, "root@127.0.0.1:/tmp/payload.bin"], {
      timeout: 60_000
    })
    expect((await ssh("wc -c < /tmp/payload.bin")).trim()).toBe(String(data.length))
    const back = join(vmDir, "payload.back")
    await execFileP("scp", [...sshOpts(), "-P", String(port), "root@127.0.0.1:/tmp/payload.bin", back], {
      timeout: 60_000
    })
    expect((await readFile(back)).equals(data)).toBe(true)

    // 9p "work" share: read what the host wrote, write something back.
    expect(await ssh("cat /mnt/work/from-host.txt; echo from-guest > /mnt/work/from-guest.txt")).toBe(
      "written on the host\n"
    )
    expect(await readFile(join(work, "from-guest.txt"), "utf8")).toBe("from-guest\n")
    // 9p "host" share is mounted read-only.
    expect(
      await ssh("cat /mnt/host/readme.txt; touch /mnt/host/nope 2>/dev/null && echo writable || echo read-only")
    ).toBe("read-only share\nread-only\n")

    // The guest presents the host key baked into its initrd.
    const { stdout: scan } = await execFileP("ssh-keyscan", ["-t", "ed25519", "-p", String(port), "127.0.0.1"], {
      timeout: 30_000
    })
    const hostPub = (await readFile(join(vmDir, "host_key.pub"), "utf8")).split(" ")[1]
    expect(scan).toContain(`ssh-ed25519 ${hostPub}`)

    await Effect.runPromise(qmpExecute(join(vmDir, "qmp.sock"), "system_powerdown"))
    expect(await exitsWithin(vm, 60_000)).toBe(0)
  }, 240_000)

  it("keeps /data across a reboot from the same disk and powers off from inside the guest", async () => {
    const vm = await boot()
    await ready()
    expect((await ssh("cat /data/x")).trim()).toBe("hello")
    // The session may be cut as the guest goes down; only the VM's exit matters.
    await ssh("poweroff").catch(() => undefined)
    expect(await exitsWithin(vm, 60_000)).toBe(0)
  }, 240_000)
})
