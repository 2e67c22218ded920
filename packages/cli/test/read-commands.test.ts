import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { catalog } from "@stoat/core"
import { homeWith, result, stoat, tempHome, vmToml } from "./helpers.js"

describe("stoat ls", () => {
  it("answers an empty data root with the envelope and creates nothing", async () => {
    const home = join(tempHome(), "absent")
    const run = await stoat(["ls", "--json"], { STOAT_HOME: home })
    expect(run.code).toBe(0)
    expect(run.stdout).toBe('{"v":3,"type":"result","cmd":"ls","ok":true,"data":{"vms":[]}}\n')
    expect(existsSync(home)).toBe(false)
  })

  it("lists a populated root including a broken VM whose port stays reserved", async () => {
    const home = tempHome()
    mkdirSync(join(home, "good"))
    writeFileSync(join(home, "good", "vm.toml"), vmToml("good", 2201))
    mkdirSync(join(home, "bad"))
    writeFileSync(join(home, "bad", "vm.toml"), "sshport = 2205\nram = 'lots'\n[[[garbage")
    mkdirSync(join(home, "isos"))
    mkdirSync(join(home, "notavm"))
    const run = await stoat(["--json", "ls"], { STOAT_HOME: home })
    expect(run.code).toBe(0)
    const vms = result(run.stdout)["data"]["vms"]
    expect(vms.map((vm: { name: string }) => vm.name)).toEqual(["bad", "good"])
    expect(vms[0]).toMatchObject({ name: "bad", state: "broken", ssh_port: 2205 })
    expect(vms[0].error).toMatch(/vm\.toml/)
    expect(vms[1]).toMatchObject({
      name: "good",
      state: "stopped",
      os: "tiny",
      ram_mb: 256,
      cpus: 1,
      ssh_port: 2201,
      agent_access: "manage",
      recipes: [],
      forwards: []
    })
    const table = await stoat(["ls"], { STOAT_HOME: home })
    expect(table.stdout).toMatch(/^NAME\s+MODE\s+STATE\s+WHERE\s+CPUS\s+RAM\s+SSH$/m)
    expect(table.stdout).toMatch(/^bad: broken: /m)
  })

  it("shows WHERE each VM runs: local for QEMU, libvirt and its host URI for libvirt VMs", async () => {
    const home = tempHome()
    for (const [name, port, extra] of [
      ["here", 2211, ""],
      ["lv", 2212, 'provider = "libvirt"\n'],
      ["far", 2213, 'provider = "libvirt"\nhost = "qemu+unix:///system?socket=/nonexistent/sock"\n']
    ] as const) {
      mkdirSync(join(home, name))
      writeFileSync(join(home, name, "vm.toml"), `${vmToml(name, port)}${extra}`)
    }
    const table = await stoat(["ls"], { STOAT_HOME: home })
    expect(table.code).toBe(0)
    // A host that does not answer leaves the VM's state unknown: broken, never stopped (issue 29).
    expect(table.stdout).toMatch(
      /^far\s+disk\s+broken\s+libvirt:qemu\+unix:\/\/\/system\?socket=\/nonexistent\/sock\s/m
    )
    expect(table.stdout).toMatch(/^here\s+disk\s+stopped\s+local\s/m)
    expect(table.stdout).toMatch(/^lv\s+disk\s+stopped\s+libvirt:qemu:\/\/\/system\s/m)
    const far = result((await stoat(["ls", "--json"], { STOAT_HOME: home })).stdout)["data"].vms.find(
      (vm: { name: string }) => vm.name === "far"
    )
    expect(far).toMatchObject({ state: "broken", provider: "libvirt" })
    expect(far.error).toBe(
      "libvirt at qemu+unix:///system?socket=/nonexistent/sock refused the connection (failed to connect to the hypervisor; Failed to connect socket to '/nonexistent/sock': No such file or directory); start the daemon there (systemctl start libvirtd, or libvirtd -d and virtlogd -d) and check virsh -c qemu+unix:///system?socket=/nonexistent/sock list; check it with stoat doctor --host 'qemu+unix:///system?socket=/nonexistent/sock'"
    )
  })

  it("warns on stderr about unknown vm.toml keys without failing", async () => {
    const home = tempHome()
    mkdirSync(join(home, "odd"))
    writeFileSync(join(home, "odd", "vm.toml"), `${vmToml("odd", 2210)}flavour = "mint"\n`)
    const run = await stoat(["ls", "--json"], { STOAT_HOME: home })
    expect(run.code).toBe(0)
    expect(run.stderr).toMatch(/unknown key "flavour"/)
    expect(result(run.stdout)["data"]["vms"][0]["state"]).toBe("stopped")
  })

  it("refuses a STOAT_HOME that is a file with a typed error", async () => {
    const file = join(tempHome(), "plain-file")
    writeFileSync(file, "x")
    const run = await stoat(["ls", "--json"], { STOAT_HOME: file })
    expect(run.code).toBe(1)
    expect(result(run.stdout)).toMatchObject({ ok: false, cmd: "ls", error: { code: "invalid_spec" } })
    expect(readFileSync(file, "utf8")).toBe("x")
  })
})

describe("stoat get", () => {
  it("suggests the closest VM name", async () => {
    const home = homeWith({ "devbox/vm.toml": vmToml("devbox", 2200) })
    const run = await stoat(["get", "devbx"], { STOAT_HOME: home })
    expect(run.code).toBe(1)
    expect(run.stderr).toBe('stoat: get: no VM "devbx" (did you mean "devbox"?); see stoat ls\n')
    const json = await stoat(["get", "devbx", "--json"], { STOAT_HOME: home })
    expect(result(json.stdout)).toMatchObject({ ok: false, error: { code: "not_found", subject: "devbx" } })
    const found = await stoat(["get", "devbox", "--json"], { STOAT_HOME: home })
    expect(result(found.stdout)["data"]["vm"]).toMatchObject({ name: "devbox", health: "ok", recipes_detail: [] })
  })
})

describe("usage errors", () => {
  it("answer in JSON with exit 2 wherever --json stands", async () => {
    const home = tempHome()
    for (const args of [
      ["--json", "ls", "--bogus"],
      ["ls", "--bogus", "--json"],
      ["get", "--json"]
    ]) {
      const run = await stoat(args, { STOAT_HOME: home })
      expect(run.code).toBe(2)
      expect(result(run.stdout)).toMatchObject({ ok: false, error: { code: "usage" } })
    }
    const plain = await stoat(["ls", "--bogus"], { STOAT_HOME: home })
    expect(plain.code).toBe(2)
    expect(plain.stderr).toMatch(/--help/)
    expect(readdirSync(home)).toEqual([])
  })

  it("up and wait take one duration syntax for --timeout (2m, 90s, plain seconds); zero or words are usage errors", async () => {
    const home = tempHome()
    for (const command of ["up", "wait"]) {
      for (const bad of ["0", "soon", "-5", "1x"]) {
        const run = await stoat(["--json", command, "nosuch", "--timeout", bad], { STOAT_HOME: home })
        expect(run.code, `${command} --timeout ${bad}`).toBe(2)
        expect(result(run.stdout)["error"]).toMatchObject({ code: "usage" })
        expect(result(run.stdout)["error"]["message"]).toContain("--timeout")
      }
      // A good duration gets past parsing to the operation: no VM "nosuch".
      for (const good of ["2m", "90s", "300", "1m30s"]) {
        const run = await stoat(["--json", command, "nosuch", "--timeout", good], { STOAT_HOME: home })
        expect(result(run.stdout)["error"], `${command} --timeout ${good}`).toMatchObject({ code: "not_found" })
      }
    }
  })

  it("refuses bad VM names at create and writes nothing", async () => {
    const home = tempHome()
    for (const name of ["CON", "lpt1.txt", "-x", "a/b", "has space"]) {
      const run = await stoat(["create", name, "--image", "tiny", "--json"], { STOAT_HOME: home })
      expect([1, 2]).toContain(run.code)
      expect(result(run.stdout)["error"]["code"]).toMatch(/^(invalid_spec|usage)$/)
    }
    expect(readdirSync(home).filter((entry) => !entry.startsWith("."))).toEqual([])
  })
})

describe("help and global flags", () => {
  it("-h, --help and help [cmd] print help for stoat or the command (exit 0)", async () => {
    const home = tempHome()
    for (const args of [["-h"], ["--help"], ["help"], []]) {
      const run = await stoat(args, { STOAT_HOME: home })
      expect(run.code, args.join(" ")).toBe(0)
      expect(run.stdout).toMatch(/^COMMANDS$/m)
      expect(run.stdout).toMatch(/^ {2}create +Create a VM$/m)
    }
    const ls = await stoat(["ls", "-h"], { STOAT_HOME: home })
    expect(ls.code).toBe(0)
    expect(ls.stdout).toMatch(/\$ stoat ls/)
    for (const args of [
      ["help", "ls"],
      ["-h", "ls"],
      ["ls", "--help"]
    ])
      expect((await stoat(args, { STOAT_HOME: home })).stdout).toBe(ls.stdout)
    expect((await stoat(["help", "guest", "ls"], { STOAT_HOME: home })).stdout).toMatch(/\$ stoat guest ls/)
    const unknown = await stoat(["help", "bogus"], { STOAT_HOME: home })
    expect(unknown).toMatchObject({ code: 2, stderr: 'stoat: help: unknown command "bogus"; see stoat help\n' })
    expect(readdirSync(home)).toEqual([])
  })

  it("with --json, help and --json alone end in one result envelope carrying the usage", async () => {
    const home = tempHome()
    const alone = await stoat(["--json"], { STOAT_HOME: home })
    expect(alone.code).toBe(0)
    expect(result(alone.stdout)).toMatchObject({ cmd: "help", ok: true })
    expect(result(alone.stdout)["data"]["usage"]).toMatch(/^COMMANDS$/m)
    const ls = await stoat(["ls", "-h", "--json"], { STOAT_HOME: home })
    expect(result(ls.stdout)["data"]["usage"]).toMatch(/\$ stoat ls/)
    const unknown = await stoat(["help", "bogus", "--json"], { STOAT_HOME: home })
    expect(unknown.code).toBe(2)
    expect(result(unknown.stdout)).toMatchObject({ cmd: "help", ok: false, error: { code: "usage" } })
    // A topic alone (oclif would print its help bare) answers like help does.
    const topic = await stoat(["guest", "--json"], { STOAT_HOME: home })
    expect(topic.code).toBe(0)
    expect(result(topic.stdout)).toMatchObject({ cmd: "guest", ok: true })
    expect(result(topic.stdout)["data"]["usage"]).toMatch(/guest ls +List guest definitions/)
  })

  it("-q is a global flag: it may stand before the command", async () => {
    const home = homeWith({ "good/vm.toml": vmToml("good", 2201) })
    const quiet = await stoat(["-q", "ls"], { STOAT_HOME: home })
    expect(quiet.code).toBe(0)
    expect(quiet.stdout).toBe((await stoat(["ls"], { STOAT_HOME: home })).stdout)
    expect(result((await stoat(["-q", "get", "good", "--json"], { STOAT_HOME: home })).stdout)).toMatchObject({
      ok: true,
      data: { vm: { name: "good" } }
    })
    expect((await stoat(["--quiet", "rm", "good"], { STOAT_HOME: home })).stderr).toMatch(/needs confirmation; pass -y/)
  })
})

describe("stoat exec", () => {
  it("takes every word after the VM name as the guest command, flags included", async () => {
    const home = tempHome()
    for (const args of [
      ["exec", "dev", "uname", "-a"],
      ["exec", "dev", "ls", "-la"],
      ["exec", "-q", "dev", "ls", "-la", "--color"],
      ["exec", "dev", "--", "ls", "-la"]
    ]) {
      const run = await stoat(args, { STOAT_HOME: home })
      expect(run, args.join(" ")).toMatchObject({ code: 1, stderr: 'stoat: exec: no VM "dev"; see stoat ls\n' })
    }
    const json = await stoat(["exec", "--json", "dev", "ls", "-la"], { STOAT_HOME: home })
    expect(result(json.stdout)).toMatchObject({ cmd: "exec", ok: false, error: { code: "not_found", subject: "dev" } })
    // After the VM name --json and -h belong to the guest command.
    const guestFlags = await stoat(["exec", "dev", "ls", "--json", "-h"], { STOAT_HOME: home })
    expect(guestFlags).toMatchObject({ code: 1, stdout: "" })
    const guestJson = await stoat(["exec", "dev", "--json"], { STOAT_HOME: home })
    expect(guestJson).toMatchObject({ code: 1, stdout: "" })
    const nothing = await stoat(["--json", "exec", "dev"], { STOAT_HOME: home })
    expect(nothing.code).toBe(2)
    expect(result(nothing.stdout)["error"]).toMatchObject({
      code: "usage",
      message: "missing command: stoat exec <vm> <cmd...>"
    })
  })
})

describe("stoat logs", () => {
  it("with no VM shows the tail of stoat.log", async () => {
    const home = homeWith({ "logs/stoat.log": "first\nsecond\nthird\n" })
    const plain = await stoat(["logs", "-n", "2"], { STOAT_HOME: home })
    expect(plain).toMatchObject({ code: 0, stdout: "second\nthird\n" })
    const json = await stoat(["logs", "--json", "-n", "1"], { STOAT_HOME: home })
    // The plain run above appended its own audit line.
    expect(result(json.stdout)).toMatchObject({
      cmd: "logs",
      ok: true,
      data: { lines: [expect.stringMatching(/op=host\.logs .*entrypoint=cli .*outcome=ok$/)] }
    })
    const which = await stoat(["logs", "--which", "apply", "--json"], { STOAT_HOME: home })
    expect(which.code).toBe(2)
    expect(result(which.stdout)["error"]["code"]).toBe("usage")
  })
})

describe("guests", () => {
  it("lists the bundled guests and merges user files", async () => {
    const home = tempHome()
    mkdirSync(join(home, "guests"))
    writeFileSync(join(home, "guests", "debian.toml"), 'name = "debian"\ndefault_ssh_user = "admin"\n')
    const run = await stoat(["guest", "ls", "--json"], { STOAT_HOME: home })
    const guests = result(run.stdout)["data"]["guests"]
    for (const name of ["alpine", "ubuntu", "debian", "fedora", "almalinux", "rocky", "arch", "opensuse"]) {
      expect(guests.map((guest: { name: string }) => guest.name)).toContain(name)
    }
    const debian = guests.find((guest: { name: string }) => guest.name === "debian")
    expect(debian).toMatchObject({ source: "bundled+user", default_ssh_user: "admin", init: "systemd" })
  })

  it("names the unknown key of a bad guest file", async () => {
    const home = tempHome()
    mkdirSync(join(home, "guests"))
    writeFileSync(join(home, "guests", "debian.toml"), 'name = "debian"\ncolour = "red"\n')
    const run = await stoat(["guest", "show", "debian", "--json"], { STOAT_HOME: home })
    expect(run.code).toBe(1)
    expect(result(run.stdout)["error"]).toMatchObject({ code: "invalid_spec" })
    expect(result(run.stdout)["error"]["message"]).toMatch(/colour/)
  })
})

describe("doctor and version", () => {
  it("doctor --json always exits 0 and reports each check", async () => {
    const run = await stoat(["doctor", "--json"], { STOAT_HOME: tempHome() })
    expect(run.code).toBe(0)
    const data = result(run.stdout)["data"]
    expect(data.checks.map((check: { name: string }) => check.name)).toEqual([
      "qemu-system-x86_64",
      "qemu-img",
      "ssh",
      "git",
      "kvm",
      "data-root",
      "vms"
    ])
    expect(typeof data.healthy).toBe("boolean")
  })

  it("version reports the contract", async () => {
    const run = await stoat(["version", "--json"], { STOAT_HOME: tempHome() })
    expect(result(run.stdout)["data"]).toEqual({ version: "0.1.0", contract: 3 })
    const plain = await stoat(["-v", "--json"], { STOAT_HOME: tempHome() })
    expect(plain.stdout).toBe("stoat 0.1.0\n")
  })
})

describe("catalog coverage", () => {
  it("every catalog operation is served by a CLI command", () => {
    const manifest = JSON.parse(readFileSync(new URL("../oclif.manifest.json", import.meta.url), "utf8")) as {
      commands: Record<string, unknown>
    }
    const ids = new Set(Object.keys(manifest.commands).map((id) => id.replaceAll(":", " ")))
    for (const { key, expose } of catalog)
      if (expose.cli !== false) expect(ids, `${key} → ${expose.cli}`).toContain(expose.cli)
    const tools = catalog.map((operation) => operation.tool)
    expect(new Set(tools).size).toBe(tools.length)
    for (const tool of tools) expect(tool).toMatch(/^[a-z][a-z0-9_]*$/)
  })
})
