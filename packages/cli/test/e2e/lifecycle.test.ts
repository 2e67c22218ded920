import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createConnection } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { e2eEnv, requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = e2eEnv(home)
const json = async (...args: string[]) => {
  // --json first: after `exec <vm>` it would belong to the guest command.
  const run = await stoat(["--json", ...args], env)
  const envelope = result(run.stdout)
  if (!envelope["ok"])
    throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}\n${run.stderr}`)
  return envelope["data"]
}
const sh = async (vm: string, script: string) =>
  (await json("exec", vm, "--", "sh", "-c", script)) as { exit_code: number; stdout: string; stderr: string }

/** Sends a line to a host port and returns what comes back, or "" when nothing answers. */
const talk = (port: number, line: string) =>
  new Promise<string>((resolve) => {
    let data = ""
    const socket = createConnection({ port, host: "127.0.0.1" }, () => socket.write(line))
    socket.setTimeout(5000, () => socket.destroy())
    socket.on("data", (chunk) => (data += chunk.toString()))
    socket.on("close", () => resolve(data))
    socket.on("error", () => resolve(data))
  })

describe("VM lifecycle with the tiny guest", () => {
  beforeAll(() => requireQemu())
  afterAll(async () => {
    for (const vm of ["alpha", "beta"]) await stoat(["down", vm], env)
  })

  it("creates, starts, reaches and runs a command", async () => {
    const created = (await json("create", "alpha", "--image", "tiny", "--agent-access", "exec")).vm
    expect(created).toMatchObject({ name: "alpha", state: "stopped", os: "tiny" })
    expect(created.ssh_port).toBeGreaterThanOrEqual(2200)
    const started = (await json("up", "alpha")).vm
    expect(started.state).toBe("running")
    const waited = await json("wait", "alpha", "--until", "reachable", "--timeout", "2m")
    expect(waited).toMatchObject({ vm: "alpha", until: "reachable", reached: true })
    const uname = await sh("alpha", "uname -s; echo persisted > /data/marker; sync")
    expect(uname).toMatchObject({ exit_code: 0, stdout: "Linux\n" })
    const failing = await stoat(["exec", "alpha", "--", "sh", "-c", "exit 7"], env)
    expect(failing.code).toBe(7)
    const again = (await json("up", "alpha")).vm
    expect(again.state).toBe("running")
  })

  it("forwards a host port to a guest listener (applies at next start)", async () => {
    const saved = await json("forward", "alpha", "18080:8080")
    expect(saved).toMatchObject({ applies_at: "next_start", forwards: [{ host_port: 18080, guest_port: 8080 }] })
    await json("down", "alpha")
    await json("up", "alpha")
    await sh(
      "alpha",
      "mkdir -p /tmp/www && echo forwarded > /tmp/www/index.html && (busybox httpd -p 8080 -h /tmp/www &) ; sleep 1"
    )
    const answer = await talk(18080, "GET /index.html HTTP/1.0\r\n\r\n")
    expect(answer).toContain("forwarded")
  })

  it("snapshots running and stopped, and restores", async () => {
    const running = await json("snapshot", "alpha", "live1")
    expect(running).toMatchObject({ vm: "alpha", tag: "live1", action: "save" })
    await sh("alpha", "echo changed > /data/marker; sync")
    await json("down", "alpha")
    expect((await json("get", "alpha")).vm.state).toBe("stopped")
    await json("snapshot", "alpha", "cold1")
    const listed = await json("snapshot", "alpha")
    expect(listed.snapshots.map((s: { tag: string }) => s.tag).sort()).toEqual(["cold1", "live1"])
    const unknown = await stoat(["snapshot", "alpha", "nope", "--restore", "--json"], env)
    expect(result(unknown.stdout)["error"]).toMatchObject({ code: "not_found" })
    expect(result(unknown.stdout)["error"]["message"]).toMatch(/cold1/)
    await json("snapshot", "alpha", "live1", "--restore")
    await json("up", "alpha")
    expect((await sh("alpha", "cat /data/marker")).stdout).toBe("persisted\n")
    const refused = await stoat(["snapshot", "alpha", "cold1", "--restore", "--json"], env)
    expect(result(refused.stdout)["error"]["code"]).toBe("already_running")
    await json("snapshot", "alpha", "cold1", "--delete")
    await json("down", "alpha")
  })

  it("clones a stopped VM onto an overlay with a fresh port; both boot", async () => {
    const refused = await stoat(["rm", "alpha", "--json"], env)
    expect(result(refused.stdout)["error"]["code"]).toBe("confirmation_required")
    const cloned = await json("clone", "alpha", "beta")
    expect(cloned).toMatchObject({ forwards_copied: false, source: "alpha", vm: { name: "beta", forwards: [] } })
    const source = (await json("get", "alpha")).vm
    expect(cloned.vm.ssh_port).not.toBe(source.ssh_port)
    const info = JSON.parse(
      execFileSync("qemu-img", ["info", "--output=json", "-U", join(home, "beta", "disk.qcow2")], { encoding: "utf8" })
    )
    expect(info["backing-filename"]).toBe(join(home, "alpha", "disk.qcow2"))
    // The clone reads the source's disk as its backing file, so QEMU's image locks let one run at a time.
    await json("up", "beta")
    expect((await sh("beta", "cat /data/marker; hostname")).stdout).toBe("persisted\nbeta\n")
    const blocked = await stoat(["up", "alpha", "--json"], env)
    expect(result(blocked.stdout)["error"]["code"]).toBe("qemu_start_failed")
    await json("down", "beta")
    await json("up", "alpha")
    expect((await sh("alpha", "hostname")).stdout).toBe("alpha\n")
    await json("up", "beta").catch(() => undefined)
  })

  it("stops gracefully, and a SIGKILLed QEMU reads as stopped without a shutdown and can be removed", async () => {
    const stopped = (await json("down", "alpha")).vm
    expect(stopped.state).toBe("stopped")
    expect(existsSync(join(home, "alpha", "qemu.pid"))).toBe(false)
    await json("up", "beta")
    const pid = Number(readFileSync(join(home, "beta", "qemu.pid"), "utf8"))
    process.kill(pid, "SIGKILL")
    await new Promise((resolve) => setTimeout(resolve, 500))
    const vms = (await json("ls")).vms as Array<{ name: string; state: string; error?: string }>
    expect(vms.find((vm) => vm.name === "beta")?.state).toBe("stopped")
    expect(vms.find((vm) => vm.name === "beta")?.error).toContain("QEMU ended without a shutdown")
    const deleted = await json("rm", "beta", "-y")
    expect(deleted).toEqual({ deleted: true, name: "beta" })
    expect(existsSync(join(home, "beta"))).toBe(false)
    expect(existsSync(join(home, "shared", "beta"))).toBe(false)
  })

  it("survives faults: a half-finished create, a corrupt vm.toml, racing creates", async () => {
    mkdirSync(join(home, "half"))
    writeFileSync(join(home, "half", "disk.qcow2"), "")
    mkdirSync(join(home, "corrupt"))
    writeFileSync(join(home, "corrupt", "vm.toml"), "sshport = 2290\nthis is not toml")
    const racing = await Promise.all(
      ["r1", "r2", "r3"].map((name) => stoat(["create", name, "--image", "tiny", "--json"], env))
    )
    const ports = racing.map((run) => result(run.stdout)["data"]["vm"]["ssh_port"] as number)
    expect(new Set(ports).size).toBe(3)
    expect(ports).not.toContain(2290)
    const vms = (await json("ls")).vms as Array<{ name: string; state: string; ssh_port: number }>
    expect(vms.map((vm) => vm.name)).not.toContain("half")
    expect(vms.find((vm) => vm.name === "corrupt")).toMatchObject({ state: "broken", ssh_port: 2290 })
    for (const name of ["r1", "r2", "r3"]) expect(vms.find((vm) => vm.name === name)?.state).toBe("stopped")
    expect((await json("rm", "corrupt", "-y")).deleted).toBe(true)
  })

  it("creates a cloud VM from your own image: overlay and NoCloud seed at first start, a clone gets its own seed", async () => {
    const base = join(home, "noble-server-cloudimg-amd64.img")
    execFileSync("qemu-img", ["create", "-f", "qcow2", base, "2G"], { stdio: "ignore" })
    const vm = (await json("create", "cloudy", "--image", base, "--ram", "512", "--console-password", "random")).vm
    expect(vm).toMatchObject({ os: "ubuntu", mode: "cloud", backend: "cloudinit", ssh_user: "stoat" })
    expect(JSON.stringify(vm)).not.toContain("console_password")
    expect(existsSync(join(home, "cloudy", "disk.qcow2"))).toBe(false)
    // The blank base boots no OS, so ask only for the process, not for SSH.
    await json("up", "cloudy", "--no-wait")
    const info = JSON.parse(
      execFileSync("qemu-img", ["info", "--output=json", "-U", join(home, "cloudy", "disk.qcow2")], {
        encoding: "utf8"
      })
    )
    expect(info["backing-filename"]).toBe(base)
    expect(info["virtual-size"]).toBe(8 * 1024 ** 3)
    const seed = join(home, "cloudy", "ovl", "seed.iso")
    expect(execFileSync("isoinfo", ["-d", "-i", seed], { encoding: "utf8" })).toMatch(/Volume id: CIDATA/)
    const userData = execFileSync("isoinfo", ["-J", "-x", "/user-data", "-i", seed], { encoding: "utf8" })
    expect(userData).toContain(readFileSync(join(home, "id_stoat.pub"), "utf8").trim())
    expect(userData).toMatch(/plain_text_passwd: "[0-9a-f]{32}"/)
    expect(execFileSync("isoinfo", ["-J", "-x", "/meta-data", "-i", seed], { encoding: "utf8" })).toContain(
      "stoat-cloudy"
    )
    await json("down", "cloudy")
    await json("clone", "cloudy", "cloudy2")
    await json("up", "cloudy2", "--no-wait")
    const cloneSeed = execFileSync(
      "isoinfo",
      ["-J", "-x", "/meta-data", "-i", join(home, "cloudy2", "ovl", "seed.iso")],
      { encoding: "utf8" }
    )
    expect(cloneSeed).toContain("stoat-cloudy2")
    await json("down", "cloudy2")
  })
})
