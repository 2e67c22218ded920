import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { join } from "node:path"
import { Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dataRootAt } from "@stoat/core"
import { hypervisorContract } from "@stoat/core/testing"
import { LibvirtGuestSignalsLive, makeLibvirtHypervisor } from "@stoat/libvirt"
import { buildTinyGuest, type TinyGuestImage } from "@stoat/qemu/tiny"
import { tinyCacheDir, tinyGuestPlan } from "../../../qemu/test/support.js"
import { e2eEnv, requireQemu, result, stoat, tempHome } from "../helpers.js"

/**
 * The libvirt provider end to end: the real stoat binary, a real libvirtd (qemu:///system) and
 * the tiny guest. Without a working libvirtd the suite fails with the reason, never skips.
 */
const URI = "qemu:///system"
const requireLibvirt = () => {
  requireQemu()
  try {
    execFileSync("virsh", ["-c", URI, "list"], { stdio: "pipe" })
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim() ?? String(error)
    throw new Error(
      `libvirt is required by this suite and virsh -c ${URI} list failed (${stderr || "virsh missing"}): apt-get install libvirt-daemon-system libvirt-clients, then start libvirtd (systemctl start libvirtd, or virtlogd -d && libvirtd -d); scripts/setup.sh does both`
    )
  }
}

/** The names of the running libvirt domains of this suite's VMs (named stoat-<vm>-<hash of the folder>). */
const domainsOf = (vm: string) =>
  execFileSync("virsh", ["-q", "-c", URI, "list", "--all", "--name"], { encoding: "utf8" })
    .split("\n")
    .filter((name) => name.startsWith(`stoat-${vm}-`))

/** A port nothing listens on now: the kernel's pick for a listener closed at once. */
const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() =>
        typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))
      )
    })
  })

const home = tempHome()
const env = e2eEnv(home)
/** The data of a stoat call run with `runEnv` that must succeed. */
const jsonIn =
  (runEnv: Record<string, string>) =>
  async (...args: string[]) => {
    const run = await stoat(["--json", ...args], runEnv)
    const envelope = result(run.stdout)
    if (!envelope["ok"])
      throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}\n${run.stderr}`)
    return envelope["data"]
  }
const json = jsonIn(env)
const failure = async (...args: string[]) => {
  const run = await stoat(["--json", ...args], env)
  const envelope = result(run.stdout)
  if (envelope["ok"]) throw new Error(`stoat ${args.join(" ")} succeeded`)
  return envelope["error"] as { code: string; message: string }
}
const sh = async (vm: string, script: string) =>
  (await json("exec", vm, "--", "sh", "-c", script)) as { exit_code: number; stdout: string; stderr: string }

describe("a libvirt VM with the tiny guest", () => {
  beforeAll(() => requireLibvirt())
  afterAll(async () => {
    for (const vm of ["lva", "lvbad"]) await stoat(["down", vm], env)
  })

  it("is created, started as a libvirt domain, reached, copied to, snapshotted, stopped and removed", async () => {
    const created = (await json("create", "lva", "--image", "tiny", "--provider", "libvirt", "--agent-access", "exec"))
      .vm
    expect(created).toMatchObject({ name: "lva", state: "stopped", provider: "libvirt" })
    expect(readFileSync(join(home, "lva", "vm.toml"), "utf8")).toMatch(/provider = "libvirt"/)
    const started = (await json("up", "lva", "--wait")).vm
    expect(started.state).toBe("running")
    // libvirt runs it: a domain of this VM exists, and ls says where.
    expect(domainsOf("lva")).toHaveLength(1)
    const listed = await stoat(["ls"], env)
    expect(listed.stdout).toMatch(/^lva\s+disk\s+running\s+libvirt:qemu:\/\/\/system\s/m)
    expect(await sh("lva", "uname -s; echo persisted > /data/marker; sync")).toMatchObject({
      exit_code: 0,
      stdout: "Linux\n"
    })

    const local = join(home, "upload.txt")
    writeFileSync(local, "from the host\n")
    await json("cp", local, "lva:/root/upload.txt")
    expect((await sh("lva", "cat /root/upload.txt")).stdout).toBe("from the host\n")
    const back = join(home, "download.txt")
    await json("cp", "lva:/root/upload.txt", back)
    expect(readFileSync(back, "utf8")).toBe("from the host\n")

    // A snapshot of the running VM goes through libvirt's monitor; a stopped one through qemu-img.
    expect(await json("snapshot", "lva", "live1")).toMatchObject({ vm: "lva", tag: "live1", action: "save" })
    await sh("lva", "echo changed > /data/marker; sync")
    await json("down", "lva")
    expect((await json("get", "lva")).vm.state).toBe("stopped")
    // A stopped libvirt VM leaves no domain behind (domains are transient).
    expect(domainsOf("lva")).toEqual([])
    await json("snapshot", "lva", "cold1")
    expect((await json("snapshot", "lva")).snapshots.map((s: { tag: string }) => s.tag).sort()).toEqual([
      "cold1",
      "live1"
    ])
    await json("snapshot", "lva", "live1", "--restore")
    await json("up", "lva", "--wait")
    expect((await sh("lva", "cat /data/marker")).stdout).toBe("persisted\n")

    // Checkpoints (and so forks) are not built for libvirt: a typed answer, and the VM runs on.
    const checkpoint = await failure("checkpoint", "lva", "c1")
    expect(checkpoint.code).toBe("capability_unavailable")
    expect((await json("get", "lva")).vm.state).toBe("running")

    // Stopped means libvirt has let go of the domain: an immediate start finds its name free.
    await json("down", "lva")
    expect((await json("up", "lva")).vm.state).toBe("running")
    await json("down", "lva")
    await json("rm", "lva", "--yes")
    expect((await json("ls")).vms).toEqual([])
    expect(domainsOf("lva")).toEqual([])
  })

  it("a start libvirt refuses is qemu_start_failed with libvirt's reason and leaves no domain", async () => {
    await json("create", "lvbad", "--image", "tiny", "--provider", "libvirt")
    const toml = join(home, "lvbad", "vm.toml")
    writeFileSync(toml, `${readFileSync(toml, "utf8")}cpu_model = "no-such-cpu"\n`)
    const refused = await failure("up", "lvbad")
    expect(refused.code).toBe("qemu_start_failed")
    expect(refused.message).toMatch(/libvirt could not start VM "lvbad".*no-such-cpu/)
    expect(domainsOf("lvbad")).toEqual([])
    expect((await json("get", "lvbad")).vm.state).toBe("stopped")
  })

  it("a libvirt host that does not answer is cannot_reach, saying what to do", async () => {
    await json(
      "create",
      "lvfar",
      "--image",
      "tiny",
      "--provider",
      "libvirt",
      "--host",
      "qemu+unix:///system?socket=/nonexistent/libvirt-sock"
    )
    const refused = await failure("up", "lvfar")
    expect(refused.code).toBe("cannot_reach")
    expect(refused.message).toMatch(/refused the connection.*start the daemon/)
    expect(refused.message).toContain("stoat doctor --host 'qemu+unix:///system?socket=/nonexistent/libvirt-sock'")
    // Its state is unknown, not "stopped": broken, naming the host and the check to run.
    const listed = (await json("ls")).vms.find((vm: { name: string }) => vm.name === "lvfar")
    expect(listed).toMatchObject({ state: "broken", provider: "libvirt" })
    expect(listed.error).toMatch(
      /libvirt at qemu\+unix:\/\/\/system\?socket=\/nonexistent\/libvirt-sock refused the connection.*check it with stoat doctor --host/
    )
    expect((await stoat(["ls"], env)).stdout).toMatch(/^lvfar\s+\S+\s+broken\s/m)
    const exec = await failure("exec", "lvfar", "--", "true")
    expect(exec.code).toBe("cannot_reach")
    expect(exec.message).toMatch(/refused the connection.*stoat doctor --host/)
    await json("rm", "lvfar", "--yes")
  })

  it("doctor --host checks a libvirt host: the local daemon passes, an ssh host that refuses fails at once with exit 1", async () => {
    const local = await stoat(["doctor", "--host", URI], env)
    expect(local.code).toBe(0)
    expect(local.stdout).toMatch(/^ok: virsh: /m)
    expect(local.stdout).toMatch(/^ok: connection: qemu:\/\/\/system: QEMU /m)
    expect(local.stdout).toMatch(/^(ok|WARN): kvm: /m)
    expect(local.stdout).toMatch(/^ok: qemu: \S*qemu-system-x86_64$/m)
    expect(local.stdout).toMatch(/^ok: machine: machine type pc-q35-7\.2 and CPU model qemu64 are there$/m)
    const refused = await stoat(["doctor", "--host", "qemu+ssh://root@127.0.0.1:1/system"], env)
    expect(refused.code).toBe(1)
    expect(refused.stdout).toMatch(
      /^FAIL: connection: ssh to libvirt host qemu\+ssh:\/\/root@127\.0\.0\.1:1\/system was refused .*Connection refused/m
    )
    expect(refused.stdout).toMatch(/^WARN: guest-ssh: not probed/m)
    const unknown = await stoat(["--json", "doctor", "--host", "qemu+ssh://root@no-such-host.invalid/system"], env)
    const report = result(unknown.stdout)["data"]
    expect(report.healthy).toBe(false)
    expect(report.checks.find((check: { name: string }) => check.name === "connection")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/is unreachable .*no-such-host\.invalid/)
    })
  })
})

/**
 * The remote path for real: libvirt over qemu+ssh:// to this machine, through an sshd of the
 * suite's own (its own port, host key and a throwaway client key), so ssh, virt-ssh-helper and the
 * remote daemon are all exercised. The VM's folder is on this machine, which the remote host is.
 */
describe("a libvirt VM on a qemu+ssh:// host", () => {
  let sshdPid: number | undefined
  let uri = ""
  const sshLog = join(home, "ssh-argv.log")
  let remoteEnv: Record<string, string> = env
  const remote = (...args: string[]) => jsonIn(remoteEnv)(...args)
  beforeAll(async () => {
    requireLibvirt()
    const dir = join(home, "sshd")
    mkdirSync(dir)
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "host_key")])
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "client_key")])
    writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "client_key.pub")), { mode: 0o600 })
    const port = await freePort()
    writeFileSync(
      join(dir, "sshd_config"),
      [
        `Port ${port}`,
        "ListenAddress 127.0.0.1",
        `HostKey ${join(dir, "host_key")}`,
        `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
        "PermitRootLogin prohibit-password",
        "PasswordAuthentication no",
        `PidFile ${join(dir, "sshd.pid")}`,
        "StrictModes no",
        "UsePAM no",
        ""
      ].join("\n")
    )
    mkdirSync("/run/sshd", { recursive: true })
    try {
      execFileSync("/usr/sbin/sshd", ["-f", join(dir, "sshd_config"), "-E", join(dir, "sshd.log")], { stdio: "pipe" })
    } catch (error) {
      throw new Error(
        `this suite runs its own sshd and could not (${String((error as { stderr?: Buffer }).stderr ?? error)}): apt-get install openssh-server, run as root`
      )
    }
    for (let tries = 0; sshdPid === undefined && tries < 50; tries++) {
      try {
        sshdPid = Number(readFileSync(join(dir, "sshd.pid"), "utf8"))
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    uri = `qemu+ssh://root@127.0.0.1:${port}/system?keyfile=${join(dir, "client_key")}&no_verify=1`
    // An ssh first on PATH that logs its arguments: proof that guest ssh went through the host (ssh -W).
    mkdirSync(join(dir, "bin"))
    writeFileSync(join(dir, "bin", "ssh"), `#!/bin/sh\necho "$*" >> ${sshLog}\nexec /usr/bin/ssh "$@"\n`)
    chmodSync(join(dir, "bin", "ssh"), 0o755)
    remoteEnv = { ...env, PATH: `${join(dir, "bin")}:${process.env["PATH"] ?? ""}` }
  })
  afterAll(async () => {
    await stoat(["down", "lvr"], remoteEnv)
    if (sshdPid !== undefined) process.kill(sshdPid)
  })

  it("doctor --host passes for the host, guest ssh through it included", async () => {
    const checked = await stoat(["doctor", "--host", uri], remoteEnv)
    expect(checked.stdout).toMatch(/^ok: connection: qemu\+ssh:/m)
    expect(checked.stdout).toMatch(/^ok: guest-ssh: guests there are reached through root@127\.0\.0\.1:\d+ \(ssh -W/m)
    expect(checked.code).toBe(0)
  })

  it("is created on the host, started, reached through the host, snapshotted, stopped and removed", async () => {
    const created = (
      await remote("create", "lvr", "--image", "tiny", "--provider", "libvirt", "--host", uri, "--agent-access", "exec")
    ).vm
    expect(created).toMatchObject({ name: "lvr", provider: "libvirt", host: uri })
    expect((await remote("up", "lvr", "--wait")).vm.state).toBe("running")
    expect(domainsOf("lvr")).toHaveLength(1)
    const listed = await stoat(["ls"], remoteEnv)
    expect(listed.stdout).toContain(`libvirt:${uri}`)
    const forward = `-W 127.0.0.1:${created.ssh_port} `
    const jumps = () =>
      (existsSync(sshLog) ? readFileSync(sshLog, "utf8") : "").split("\n").filter((line) => line.includes(forward))
    // up --wait probed the guest's sshd through the host.
    const probes = jumps().length
    expect(probes).toBeGreaterThan(0)
    expect(await remote("exec", "lvr", "--", "uname", "-s")).toMatchObject({ exit_code: 0, stdout: "Linux\n" })
    // The command's connection went through the host too: one more ssh -W to the guest's port there.
    expect(jumps().length).toBeGreaterThan(probes)
    expect(jumps()[0]).toMatch(/-p \d+ -l root -i \S+client_key -- 127\.0\.0\.1$/)
    expect((await remote("ssh-command", "lvr")).argv.join(" ")).toContain(`ProxyCommand=ssh -W %h:%p`)
    expect(await remote("snapshot", "lvr", "r1")).toMatchObject({ vm: "lvr", tag: "r1", action: "save" })
    await remote("down", "lvr")
    expect(domainsOf("lvr")).toEqual([])
    expect((await remote("snapshot", "lvr")).snapshots.map((s: { tag: string }) => s.tag)).toEqual(["r1"])
    await remote("rm", "lvr", "--yes")
  })
})

/** The provider keeps the Hypervisor and GuestSignals ports' promises: core's contract cases, as the QEMU provider's e2e runs them. */
describe("the libvirt provider keeps the Hypervisor contract", () => {
  const root = join(home, "contract")
  let image: TinyGuestImage
  beforeAll(async () => {
    requireLibvirt()
    mkdirSync(root)
    image = await buildTinyGuest({ cacheDir: join(tinyCacheDir, "debs"), outDir: join(tinyCacheDir, "image") })
  }, 600_000)

  const layer = Layer.merge(makeLibvirtHypervisor({ tinyCacheDir }), LibvirtGuestSignalsLive).pipe(
    Layer.provide(dataRootAt(root))
  )
  const cases = hypervisorContract(layer, {
    plan: async (name) => {
      const plan = await tinyGuestPlan(root, image, name)
      writeFileSync(join(plan.vm.dir, "vm.toml"), 'provider = "libvirt"\n')
      return plan
    }
  })
  for (const contractCase of cases) it(contractCase.name, contractCase.run, 300_000)
})
