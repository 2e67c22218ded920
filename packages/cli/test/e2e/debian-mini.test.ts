/**
 * The realistic guest: `stoat pull debian-12-mini` builds Debian 12 with mmdebstrap from the
 * host's Debian mirror (root and network needed, as on CI), and one VM made from it serves the
 * whole file: systemd, apt through user-mode networking, journald, sudo, the work share.
 * The build is cached across runs in STOAT_DEBIAN_MINI_CACHE (default ~/.cache/stoat-test).
 */
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { qmpExecute } from "@stoat/qemu"
import { e2eEnv, requireQemu, result, stoat, tempHome, type RunResult } from "../helpers.js"

const home = tempHome()
const env = {
  ...e2eEnv(home),
  STOAT_DEBIAN_MINI_CACHE:
    process.env["STOAT_DEBIAN_MINI_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "debian-12-mini")
}
const VM = "deb"

const explain = (what: string, run: RunResult) =>
  `${what} exited ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`

/** Runs argv in the guest as the ssh user (stoat); the CLI's exit code is the guest command's. */
const guest = (...argv: string[]) => stoat(["exec", VM, "--", ...argv], env)
const sh = (script: string) => guest("sh", "-c", script)
/** `--json` first (after `exec <vm>` it would belong to the guest); the data of a successful result. */
const data = async (...args: string[]): Promise<Record<string, any>> => {
  const answer = result((await stoat(["--json", ...args], env)).stdout)
  if (!answer["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(answer["error"])}`)
  return answer["data"]
}
const failure = async (...args: string[]): Promise<{ code: string; message: string; reason?: string }> => {
  const answer = result((await stoat(["--json", ...args], env)).stdout)
  if (answer["ok"]) throw new Error(`stoat ${args.join(" ")} succeeded: ${JSON.stringify(answer["data"])}`)
  return answer["error"]
}
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
    if (pull.code !== 0)
      throw new Error(explain("stoat pull debian-12-mini (needs root, mmdebstrap and the Debian mirror)", pull))
    const create = await stoat(["create", VM, "--image", "debian-12-mini"], env)
    if (create.code !== 0) throw new Error(explain("stoat create", create))
    const up = await stoat(["up", VM, "--wait", "--timeout", "300"], env)
    if (up.code !== 0) throw new Error(explain("stoat up --wait", up))
  }, 1_800_000)
  afterAll(async () => {
    await stoat(["down", VM], env)
    // The VM's overlay grows by what apt wrote (~100 MB); the cached build stays.
    rmSync(home, { recursive: true, force: true })
  })

  it("pulling again reuses the cached build instead of running mmdebstrap", async () => {
    const again = await stoat(["--json", "pull", "debian-12-mini"], env)
    expect(result(again.stdout)).toMatchObject({
      ok: true,
      data: { id: "debian-12-mini", downloaded: true, verified: true }
    })
    expect(again.stdout).not.toMatch(/mmdebstrap/)
  })

  it("is a debian VM logging in as stoat, whose disk overlays the build's root disk", async () => {
    const get = result((await stoat(["--json", "get", VM], env)).stdout)
    expect(get).toMatchObject({
      ok: true,
      data: { vm: { name: VM, os: "debian", state: "running", ram_mb: 1024, cpus: 1, disk: "4G" } }
    })
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
    expect(report).toBe(
      ["running", "active", "active", VM, "stoat", "0", "0", "0", "root 600", "unreadable", ""].join("\n")
    )
  })

  it("offers the host key stoat generated for the VM", async () => {
    const pub = readFileSync(join(home, "guest_host_ed25519_key.pub"), "utf8").trim().split(/\s+/).slice(0, 2).join(" ")
    expect(await ok("sudo -n ssh-keygen -y -f /run/stoat/ssh_host_ed25519_key")).toContain(pub)
  })

  it("mounts the work share read-write at /mnt/work over 9p", async () => {
    writeFileSync(join(home, "shared", VM, "from-host.txt"), "hello from the host\n")
    // The login user owns the share's top folder, so it can create files there.
    const report = await ok(
      "findmnt -n -o FSTYPE /mnt/work; stat -c %U /mnt/work; cat /mnt/work/from-host.txt; echo 'hello from the guest' > /mnt/work/from-guest.txt"
    )
    expect(report).toBe("9p\nstoat\nhello from the host\n")
    expect(readFileSync(join(home, "shared", VM, "from-guest.txt"), "utf8")).toBe("hello from the guest\n")
  })

  it("pkg install: apt-get update and install of a real package through QEMU's user-mode network", async () => {
    expect(await ok("command -v hello || echo absent")).toBe("absent\n")
    const install = await data("pkg", "install", VM, "hello")
    expect(install["exit_code"], install["stderr"]).toBe(0)
    expect(await ok("hello; dpkg-query -W -f '${Status}\\n' hello")).toBe("Hello, world!\ninstall ok installed\n")
    // A flag-like name is refused before anything runs, even after `--`.
    expect((await failure("pkg", "install", VM, "--", "-oAPT::Get::AllowUnauthenticated=1")).code).toBe("usage")
    // Shell syntax reaches apt as a literal (unknown) name, and apt's own refusal comes back as the result.
    const unknown = await data(
      "pkg",
      "install",
      VM,
      "no-such-package-stoat",
      "$(touch${IFS}/tmp/pwned)",
      "`touch${IFS}/tmp/pwned`"
    )
    expect(unknown["exit_code"]).not.toBe(0)
    expect(unknown["stderr"] + unknown["stdout"]).toMatch(/Unable to locate package no-such-package-stoat/)
    expect(await ok("ls /tmp/pwned 2>&1 || true")).toMatch(/No such file/)
  })

  // ~12 MB of packages unpacked under TCG: minutes on a loaded 2-core host.
  it("applies the bundled python-dev recipe for real with apt: outputs, a venv owned by the ssh user, health ok, skipped when applied", async () => {
    await data("update", VM, "--recipes", "python-dev")
    const applied = await data("apply", VM)
    expect(applied).toMatchObject({ vm: VM, applied: ["python-dev"] })
    const detail = applied["recipes_detail"].find((recipe: { name: string }) => recipe.name === "python-dev")
    expect(detail).toMatchObject({
      applied: true,
      health: "ok",
      outputs: { python: "/opt/venv/bin/python", venv: "/opt/venv" }
    })
    // default_from = "ssh_user": the venv belongs to the VM's ssh account, and its python runs.
    expect(await ok("stat -c %U /opt/venv; /opt/venv/bin/python -c 'import sys; print(sys.prefix)'")).toBe(
      "stoat\n/opt/venv\n"
    )
    expect(await ok("dpkg-query -W -f '${Status}\\n' python3-venv")).toBe("install ok installed\n")
    const log = readFileSync(join(home, VM, "last-provision.log"), "utf8")
    expect(log).toContain("=== recipe python-dev ===")
    expect(log.trimEnd().split("\n").at(-1)).toBe("done")
    // Once-mode: unchanged script and params, nothing runs again.
    expect((await data("apply", VM))["applied"]).toEqual([])
  }, 600_000)

  it("file write: as the ssh user where it may, as root with --as-root (and not otherwise) under /etc", async () => {
    expect(await data("file", "write", VM, "/home/stoat/mine.txt", "--content", "mine\n")).toEqual({
      path: "/home/stoat/mine.txt",
      bytes: 5,
      mode: "0644"
    })
    expect((await failure("file", "write", VM, "/etc/stoat-e2e.conf", "--content", "nope\n")).code).toBe(
      "access_denied"
    )
    expect(await data("file", "write", VM, "/etc/stoat-e2e.conf", "--as-root", "--content", "rooted\n")).toMatchObject({
      path: "/etc/stoat-e2e.conf",
      bytes: 7
    })
    expect(await ok("stat -c '%U %a' /home/stoat/mine.txt /etc/stoat-e2e.conf; cat /etc/stoat-e2e.conf")).toBe(
      "stoat 644\nroot 644\nrooted\n"
    )
  })

  it("svc enable/start/stop and svc status with systemd; tail --unit reads the unit's journal", async () => {
    const unit =
      '[Unit]\nDescription=stoat e2e ticker\n\n[Service]\nExecStart=/bin/sh -c "echo stoat-e2e-started; exec sleep infinity"\n\n[Install]\nWantedBy=multi-user.target\n'
    await data("file", "write", VM, "/etc/systemd/system/ticker.service", "--as-root", "--content", unit)
    expect(await ok("sudo -n systemctl daemon-reload && systemctl cat ticker | grep -c ExecStart")).toBe("1\n")
    expect(await data("svc", "status", VM, "ticker")).toMatchObject({ active: false, enabled: false })
    expect((await data("svc", "enable", VM, "ticker"))["exit_code"]).toBe(0)
    expect((await data("svc", "start", VM, "ticker"))["exit_code"]).toBe(0)
    const running = await data("svc", "status", VM, "ticker")
    expect(running).toMatchObject({ active: true, enabled: true, exit_code: 0 })
    expect(running["stdout"]).toMatch(/ticker\.service - stoat e2e ticker/)
    let lines: string[] = []
    for (let i = 0; i < 20 && !lines.some((line) => line.includes("stoat-e2e-started")); i++)
      lines = (await data("tail", VM, "--unit", "ticker", "-n", "20"))["lines"]
    expect(lines.some((line) => line.includes("stoat-e2e-started"))).toBe(true)
    expect((await data("svc", "stop", VM, "ticker"))["exit_code"]).toBe(0)
    expect(await data("svc", "status", VM, "ticker")).toMatchObject({ active: false, enabled: true })
    // systemd's own answer for a unit that does not exist, through the same tools.
    expect(await failure("svc", "status", VM, "no-such-unit")).toMatchObject({ code: "not_found" })
    expect((await data("svc", "start", VM, "no-such-unit"))["exit_code"]).not.toBe(0)
    expect((await failure("svc", "start", VM, "--", "--no-block")).code).toBe("usage")
  })

  it("user add: a user with a home folder and bash; adding it again is useradd's own refusal", async () => {
    expect((await data("user", "add", VM, "alice"))["exit_code"]).toBe(0)
    expect(await ok("getent passwd alice | cut -d: -f6,7; stat -c %U /home/alice")).toBe(
      "/home/alice:/bin/bash\nalice\n"
    )
    const again = await data("user", "add", VM, "alice")
    expect(again["exit_code"]).not.toBe(0)
    expect(again["stderr"]).toMatch(/already exists/)
    for (const hostile of ["-o", "$(id)", "bob;reboot"])
      expect((await failure("user", "add", VM, "--", hostile)).code).toBe("usage")
  })

  it("answers parallel calls on the one VM, each on its own", async () => {
    const calls = await Promise.all([
      // Each CLI process logs in on its own; three at once is what a TCG guest answers in time on a busy host.
      data("svc", "status", VM, "ssh"),
      data("file", "write", VM, "/tmp/p1", "--content", "1"),
      data("file", "write", VM, "/tmp/p2", "--content", "2")
    ])
    expect(calls[0]).toMatchObject({ active: true, enabled: true })
    expect(await ok("cat /tmp/p1 /tmp/p2")).toBe("12")
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

  it("powers off cleanly on the ACPI power button (systemd-logind), and the disk keeps what was written", async () => {
    // The button itself rather than `stoat down`, whose 10 s grace a loaded TCG host can outlast
    // (then SIGTERM ends QEMU and nothing would show whether the guest handled the button).
    const consoleBefore = statSync(join(home, VM, "console.log")).size
    await Effect.runPromise(
      qmpExecute(join(home, VM, "qmp.sock"), "system_powerdown", undefined, {
        subject: VM,
        connectTimeoutMs: 10_000,
        commandTimeoutMs: 10_000
      })
    )
    const stopped = await data("wait", VM, "--until", "stopped", "--timeout", "3m")
    expect(stopped).toMatchObject({ vm: VM, until: "stopped", reached: true })
    // The kernel's last words after systemd's shutdown.
    expect(
      readFileSync(join(home, VM, "console.log"))
        .subarray(consoleBefore)
        .toString("utf8")
    ).toContain("reboot: Power down")
    const up = await stoat(["up", VM, "--wait", "--timeout", "300"], env)
    expect(up.code, explain("stoat up", up)).toBe(0)
    expect(await ok("cat /home/stoat/mine.txt; hello")).toBe("mine\nHello, world!\n")
    const down = await stoat(["down", VM], env)
    expect(down.code, explain("stoat down", down)).toBe(0)
    expect(existsSync(join(home, VM, "qemu.pid"))).toBe(false)
  })
})
