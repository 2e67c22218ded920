/**
 * The realistic guest: `stoat pull debian-12-mini` builds Debian 12 with mmdebstrap from the
 * host's Debian mirror (root and network needed, as on CI), and one VM made from it serves the
 * whole file: systemd, apt through user-mode networking, journald, sudo, the work share.
 * The build is cached across runs in STOAT_DEBIAN_MINI_CACHE (default ~/.cache/stoat-test).
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { result, stoat, tempHome, type RunResult } from "../helpers.js"

const requireQemu = () => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_DEBIAN_MINI_CACHE: process.env["STOAT_DEBIAN_MINI_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "debian-12-mini")
}
const VM = "deb"

const explain = (what: string, run: RunResult) => `${what} exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`

/** Runs argv in the guest as the ssh user (stoat); the CLI's exit code is the guest command's. */
const guest = (...argv: string[]) => stoat(["exec", VM, "--", ...argv], env)
const sh = (script: string) => guest("sh", "-c", script)
const ok = async (script: string): Promise<string> => {
  const run = await sh(script)
  if (run.code !== 0) throw new Error(explain(`guest: ${script}`, run))
  return run.stdout
}

describe("debian-12-mini: a Debian 12 guest built locally, one VM for the file", () => {
  beforeAll(async () => {
    requireQemu()
    // A cold build downloads ~120 MB of packages and takes minutes under load; a warm one seconds.
    const pull = await stoat(["pull", "debian-12-mini"], env)
    if (pull.code !== 0) throw new Error(explain("stoat pull debian-12-mini (needs root, mmdebstrap and the Debian mirror)", pull))
    const create = await stoat(["create", VM, "--image", "debian-12-mini"], env)
    if (create.code !== 0) throw new Error(explain("stoat create", create))
    const up = await stoat(["up", VM, "--wait", "--timeout", "300"], env)
    if (up.code !== 0) throw new Error(explain("stoat up --wait", up))
  }, 1_800_000)
  afterAll(async () => {
    await stoat(["down", VM], env)
  })

  it("pulling again reuses the cached build instead of running mmdebstrap", async () => {
    const again = await stoat(["--json", "pull", "debian-12-mini"], env)
    expect(result(again.stdout)).toMatchObject({ ok: true, data: { id: "debian-12-mini", downloaded: true, verified: true } })
    expect(again.stdout).not.toMatch(/mmdebstrap/)
  })

  it("is a debian VM logging in as stoat, whose disk overlays the build's root disk", async () => {
    const get = result((await stoat(["--json", "get", VM], env)).stdout)
    expect(get).toMatchObject({ ok: true, data: { vm: { name: VM, os: "debian", state: "running", ram_mb: 1024, cpus: 1, disk: "4G" } } })
    const toml = readFileSync(join(home, VM, "vm.toml"), "utf8")
    expect(toml).toMatch(/sshuser = "stoat"/)
    const base = /base = "([^"]+)"/.exec(toml)?.[1] ?? ""
    expect(base).toMatch(/\/debian-12-mini\/image\/[^/]+\/rootfs\.qcow2$/)
    expect(existsSync(join(base, "..", "manifest.json"))).toBe(true)
  })

  it("boots systemd to running with journald, hostname = VM name, and passwordless sudo", async () => {
    // One guest call per check costs seconds under TCG (a login each); one script answers them all.
    const report = await ok(
      [
        "systemctl is-system-running --wait",
        "systemctl is-active systemd-journald ssh",
        "hostname",
        "id -un",
        "sudo -n id -u",
        "systemctl --failed --no-legend | wc -l",
        // No per-VM secret on the disk: the host key lives in /run, readable by root only.
        "ls /etc/ssh | grep -c ssh_host_ || true",
        "stat -c '%U %a' /run/stoat/ssh_host_ed25519_key",
        "cat /run/stoat/ssh_host_ed25519_key >/dev/null 2>&1 && echo readable || echo unreadable"
      ].join("; ")
    )
    expect(report).toBe(["running", "active", "active", VM, "stoat", "0", "0", "0", "root 600", "unreadable", ""].join("\n"))
  })

  it("offers the host key stoat generated for the VM", async () => {
    const pub = readFileSync(join(home, "guest_host_ed25519_key.pub"), "utf8").trim().split(/\s+/).slice(0, 2).join(" ")
    expect(await ok("sudo -n ssh-keygen -y -f /run/stoat/ssh_host_ed25519_key")).toContain(pub)
  })

  it("mounts the work share read-write at /mnt/work over 9p", async () => {
    writeFileSync(join(home, "shared", VM, "from-host.txt"), "hello from the host\n")
    // The login user owns the share's top folder, so it can create files there.
    const report = await ok("findmnt -n -o FSTYPE /mnt/work; stat -c %U /mnt/work; cat /mnt/work/from-host.txt; echo 'hello from the guest' > /mnt/work/from-guest.txt")
    expect(report).toBe("9p\nstoat\nhello from the host\n")
    expect(readFileSync(join(home, "shared", VM, "from-guest.txt"), "utf8")).toBe("hello from the guest\n")
  })

  it("installs a real package with apt through QEMU's user-mode network", async () => {
    const report = await ok(
      "command -v hello || echo absent; sudo -n apt-get update -q >/dev/null && sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -q hello >/dev/null && hello && dpkg-query -W -f '${Status}\\n' hello"
    )
    expect(report).toBe("absent\nHello, world!\ninstall ok installed\n")
  })

  it("enables, starts and stops a systemd service, and its journal can be read", async () => {
    const unit = "[Unit]\nDescription=stoat e2e ticker\n\n[Service]\nExecStart=/bin/sh -c \"echo stoat-e2e-started; exec sleep infinity\"\n\n[Install]\nWantedBy=multi-user.target\n"
    const before = await ok(`printf '%s' '${unit}' | sudo -n tee /etc/systemd/system/ticker.service >/dev/null && sudo -n systemctl daemon-reload; systemctl is-enabled ticker || true`)
    expect(before).toBe("disabled\n")
    const running = await ok("sudo -n systemctl enable ticker 2>/dev/null && sudo -n systemctl start ticker; systemctl is-active ticker; systemctl is-enabled ticker")
    expect(running).toBe("active\nenabled\n")
    // The user is in systemd-journal, so the unit's journal is readable without sudo.
    let journal = ""
    for (let i = 0; i < 20 && !journal.includes("stoat-e2e-started"); i++) journal = await ok("journalctl -u ticker --no-pager -o cat -n 20")
    expect(journal).toContain("stoat-e2e-started")
    expect((await sh("sudo -n systemctl stop ticker; systemctl is-active ticker")).stdout).toBe("inactive\n")
  })

  it("adds a user with a home folder and bash", async () => {
    expect(await ok("sudo -n useradd -m -s /bin/bash alice && getent passwd alice | cut -d: -f6,7 && stat -c %U /home/alice")).toBe("/home/alice:/bin/bash\nalice\n")
  })

  it("writes as the ssh user where it may, and only as root under /etc", async () => {
    const denied = await sh("echo mine > /home/stoat/mine.txt && stat -c %U /home/stoat/mine.txt && echo nope > /etc/stoat-e2e.conf")
    expect(denied.stdout).toBe("stoat\n")
    expect(denied.code).not.toBe(0)
    expect(denied.stderr).toMatch(/Permission denied/)
    expect(await ok("echo rooted | sudo -n tee /etc/stoat-e2e.conf >/dev/null && stat -c %U /etc/stoat-e2e.conf && cat /etc/stoat-e2e.conf")).toBe("root\nrooted\n")
  })

  it("grows its root file system to the VM's 4G disk", async () => {
    // Online resize runs after the ready line; wait for it to have run.
    const size = await ok(
      "while ! systemctl show -p ActiveState --value stoat-growfs | grep -qx inactive; do sleep 0.5; done; systemctl show -p Result --value stoat-growfs; df -B1M --output=size / | tail -1"
    )
    const [result, mib] = size.trim().split(/\s+/)
    expect(result).toBe("success")
    expect(Number(mib)).toBeGreaterThan(3500)
  })

  it("powers off cleanly through the ACPI button (systemd-logind), and the disk keeps what was written", async () => {
    const consoleBefore = statSync(join(home, VM, "console.log")).size
    const down = await stoat(["down", VM], env)
    expect(down.code, explain("stoat down", down)).toBe(0)
    expect(existsSync(join(home, VM, "qemu.pid"))).toBe(false)
    // The kernel's last words after systemd's shutdown, not a SIGTERM'd QEMU.
    expect(readFileSync(join(home, VM, "console.log")).subarray(consoleBefore).toString("utf8")).toContain("reboot: Power down")
    expect(statSync(join(home, VM, "disk.qcow2")).size).toBeGreaterThan(0)
    const up = await stoat(["up", VM, "--wait", "--timeout", "300"], env)
    expect(up.code, explain("stoat up", up)).toBe(0)
    expect(await ok("cat /home/stoat/mine.txt; hello")).toBe("mine\nHello, world!\n")
  })
})
