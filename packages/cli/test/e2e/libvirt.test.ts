import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { join } from "node:path"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dataRootAt } from "@stoat/core"
import { hypervisorContract } from "@stoat/core/testing"
import { LibvirtGuestSignalsLive, makeLibvirtHypervisor, probeKvmOn } from "@stoat/libvirt"
import { probeKvm } from "@stoat/qemu"
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

/** The names of the running libvirt domains of this suite's VMs (named stoat-<vm>-<hash of the folder>) on a host. */
const domainsOf = (vm: string, uri = URI) =>
  execFileSync("virsh", ["-q", "-c", uri, "list", "--all", "--name"], { encoding: "utf8" })
    .split("\n")
    .filter((name) => name.startsWith(`stoat-${vm}-`))

/** Whether something accepts a connection on this machine's loopback at `port`. */
const portAnswers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
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

    // A checkpoint saves the running VM (libvirt's external snapshot with memory); a fork of it runs
    // warm beside its source, as a domain of its own, with its own disk and hostname.
    await sh("lva", "echo before-checkpoint > /root/warm")
    expect((await json("checkpoint", "lva", "c1")).checkpoint).toMatchObject({
      vm: "lva",
      name: "c1",
      ram_mb: 256,
      cpus: 1
    })
    expect((await json("get", "lva")).vm.state).toBe("running")
    await sh("lva", "echo after-checkpoint > /root/warm")
    const forked = await json("fork", "lva@c1", "lvf")
    expect(forked.forks.map((fork: { vm: { name: string } }) => fork.vm.name)).toEqual(["lvf"])
    expect(domainsOf("lvf")).toHaveLength(1)
    expect((await sh("lvf", "cat /root/warm; hostname")).stdout).toBe("before-checkpoint\nlvf\n")
    expect((await sh("lva", "cat /root/warm; hostname")).stdout).toBe("after-checkpoint\nlva\n")
    await json("down", "lvf")
    await json("rm", "lvf", "--yes")
    expect(domainsOf("lvf")).toEqual([])

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
    // It may still run there: rm keeps it, and says how to delete it once the host is gone for good.
    const kept = await failure("rm", "lvfar", "--yes")
    expect(kept.code).toBe("cannot_reach")
    expect(kept.message).toMatch(/^VM "lvfar" was not deleted: it may still run on a host .*rm --force/)
    await json("rm", "lvfar", "--yes", "--force")
    expect((await json("ls")).vms.some((vm: { name: string }) => vm.name === "lvfar")).toBe(false)
  })

  it("ls over three VMs on a host that does not answer asks that host once, and shows each broken", async () => {
    const dead = "qemu+ssh://root@127.0.0.1:1/system"
    const names = ["lvd1", "lvd2", "lvd3"]
    for (const name of names)
      await json("create", name, "--image", "tiny", "--provider", "libvirt", "--host", dead, "--ram", "256")
    // A virsh first on PATH that logs each call: the count of state queries that went to that host.
    const bin = join(home, "virsh-log-bin")
    const log = join(home, "virsh.log")
    mkdirSync(bin, { recursive: true })
    writeFileSync(join(bin, "virsh"), `#!/bin/sh\necho "$*" >> ${log}\nexec /usr/bin/virsh "$@"\n`)
    chmodSync(join(bin, "virsh"), 0o755)
    const logged = jsonIn({ ...env, PATH: `${bin}:${process.env["PATH"] ?? ""}` })
    const listed = (await logged("ls")).vms.filter((vm: { name: string }) => names.includes(vm.name))
    expect(listed.map((vm: { state: string }) => vm.state)).toEqual(["broken", "broken", "broken"])
    const asked = readFileSync(log, "utf8")
      .split("\n")
      .filter((line) => line.includes(dead))
    expect(asked).toHaveLength(1)
    for (const name of names) await json("rm", name, "--yes", "--force")
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
 * The remote path for real: a second libvirt host (second-host.sh) with its own network, libvirtd
 * and sshd, reached over qemu+ssh:// with its own host key and a throwaway client key, so ssh,
 * virt-ssh-helper and that host's daemon are all exercised, and its guests' ports are bound where
 * only a jump through it reaches them. The VM's folder is on the shared file system.
 */
describe("a libvirt VM on a qemu+ssh:// host", () => {
  const HOST = "stoatlv"
  const secondHost = (...args: string[]) =>
    execFileSync("sh", [join(import.meta.dirname, "second-host.sh"), ...args], { stdio: "pipe" })
  let uri = ""
  const sshLog = join(home, "ssh-argv.log")
  const virshLog = join(home, "virsh-argv.log")
  let remoteEnv: Record<string, string> = env
  const remote = (...args: string[]) => jsonIn(remoteEnv)(...args)
  const remoteFailure = async (...args: string[]) => {
    const run = await stoat(["--json", ...args], remoteEnv)
    const envelope = result(run.stdout)
    if (envelope["ok"]) throw new Error(`stoat ${args.join(" ")} succeeded`)
    return envelope["error"] as { code: string; message: string }
  }
  beforeAll(async () => {
    requireLibvirt()
    const dir = join(home, "sshd")
    mkdirSync(dir)
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "host_key")])
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "client_key")])
    writeFileSync(join(dir, "authorized_keys"), readFileSync(join(dir, "client_key.pub")), { mode: 0o600 })
    writeFileSync(
      join(dir, "sshd_config"),
      [
        // Its loopback too: doctor --host checks that ssh -W to the host's own loopback works.
        "ListenAddress 10.77.0.2",
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
    try {
      secondHost("up", HOST, join(dir, "sshd_config"))
    } catch (error) {
      throw new Error(
        `this suite runs a second libvirt host in a network namespace and could not (${String((error as { stderr?: Buffer }).stderr ?? error)}): run as root with iproute2, util-linux, openssh-server and libvirt-daemon-system`
      )
    }
    uri = `qemu+ssh://root@10.77.0.2/system?keyfile=${join(dir, "client_key")}&no_verify=1`
    // An ssh and a virsh first on PATH that log their arguments: proof that guest ssh went through
    // the host (ssh -W), and a count of the state queries that went to it.
    mkdirSync(join(dir, "bin"))
    for (const [tool, log] of [
      ["ssh", sshLog],
      ["virsh", virshLog]
    ] as const) {
      writeFileSync(join(dir, "bin", tool), `#!/bin/sh\necho "$*" >> ${log}\nexec /usr/bin/${tool} "$@"\n`)
      chmodSync(join(dir, "bin", tool), 0o755)
    }
    remoteEnv = { ...env, PATH: `${join(dir, "bin")}:${process.env["PATH"] ?? ""}` }
  })
  afterAll(() => {
    secondHost("down", HOST)
  })

  it("doctor --host passes for the host, guest ssh through it included", async () => {
    const checked = await stoat(["doctor", "--host", uri], remoteEnv)
    expect(checked.stdout).toMatch(/^ok: connection: qemu\+ssh:/m)
    expect(checked.stdout).toMatch(/^ok: guest-ssh: guests there are reached through root@10\.77\.0\.2 \(ssh -W/m)
    expect(checked.code).toBe(0)
  })

  it("is created on the host, started, reached only through the host, snapshotted, stopped and removed", async () => {
    const created = (
      await remote("create", "lvr", "--image", "tiny", "--provider", "libvirt", "--host", uri, "--agent-access", "exec")
    ).vm
    expect(created).toMatchObject({ name: "lvr", provider: "libvirt", host: uri })
    expect((await remote("up", "lvr", "--wait")).vm.state).toBe("running")
    expect(domainsOf("lvr", uri)).toHaveLength(1)
    expect(domainsOf("lvr")).toEqual([])
    const listed = await stoat(["ls"], remoteEnv)
    expect(listed.stdout).toContain(`libvirt:${uri}`)
    // The guest's port is bound on that host's loopback, not this machine's.
    expect(await portAnswers(created.ssh_port)).toBe(false)
    const forward = `-W 127.0.0.1:${created.ssh_port} `
    const jumps = () =>
      (existsSync(sshLog) ? readFileSync(sshLog, "utf8") : "").split("\n").filter((line) => line.includes(forward))
    // up --wait probed the guest's sshd through the host.
    const probes = jumps().length
    expect(probes).toBeGreaterThan(0)
    expect(await remote("exec", "lvr", "--", "uname", "-s")).toMatchObject({ exit_code: 0, stdout: "Linux\n" })
    // The command's connection went through the host too: one more ssh -W to the guest's port there.
    expect(jumps().length).toBeGreaterThan(probes)
    expect(jumps()[0]).toMatch(/-l root -i \S+client_key -- 10\.77\.0\.2$/)
    expect((await remote("ssh-command", "lvr")).argv.join(" ")).toContain(`ProxyCommand=ssh -W %h:%p`)
    const file = join(home, "to-remote.txt")
    writeFileSync(file, "across hosts\n")
    await remote("cp", file, "lvr:/tmp/to-remote.txt")
    expect((await remote("exec", "lvr", "--", "cat", "/tmp/to-remote.txt")).stdout).toBe("across hosts\n")
    // A fork there: the saved state is streamed to the new domain through the same jump.
    await remote("checkpoint", "lvr", "c1")
    await remote("fork", "lvr@c1", "lvrf")
    expect(domainsOf("lvrf", uri)).toHaveLength(1)
    expect(await remote("exec", "lvrf", "--", "cat", "/tmp/to-remote.txt")).toMatchObject({ stdout: "across hosts\n" })
    await remote("down", "lvrf")
    await remote("rm", "lvrf", "--yes")
    expect(domainsOf("lvrf", uri)).toEqual([])
    expect(await remote("snapshot", "lvr", "r1")).toMatchObject({ vm: "lvr", tag: "r1", action: "save" })
    await remote("down", "lvr")
    expect(domainsOf("lvr", uri)).toEqual([])
    expect((await remote("snapshot", "lvr")).snapshots.map((s: { tag: string }) => s.tag)).toEqual(["r1"])
    await remote("rm", "lvr", "--yes")
  })

  it("a host that stops answering leaves its VMs broken, never stopped: ls waits for it once, down and rm refuse, rm --force deletes", async () => {
    for (const name of ["lvu1", "lvu2"])
      await remote("create", name, "--image", "tiny", "--provider", "libvirt", "--host", uri)
    await remote("up", "lvu1", "--wait")
    secondHost("unplug", HOST)
    try {
      writeFileSync(virshLog, "")
      const listed = (await remote("ls")).vms.filter((vm: { name: string }) => vm.name.startsWith("lvu"))
      expect(listed.map((vm: { state: string }) => vm.state)).toEqual(["broken", "broken"])
      expect(listed[0].error).toMatch(/did not answer in time.*stoat doctor --host/)
      // The host was asked once for both VMs: ls waited out one state query's time limit, not one each.
      expect(readFileSync(virshLog, "utf8").match(/ domstate /g)).toHaveLength(1)
      expect((await remoteFailure("down", "lvu1")).code).toBe("cannot_reach")
      const kept = await remoteFailure("rm", "lvu2", "--yes")
      expect(kept).toMatchObject({ code: "cannot_reach" })
      expect(existsSync(join(home, "lvu2", "vm.toml"))).toBe(true)
      await remote("rm", "lvu2", "--yes", "--force")
      expect(existsSync(join(home, "lvu2"))).toBe(false)
    } finally {
      secondHost("plug", HOST)
    }
    // Back on the network, the running VM is found running, and stops.
    expect((await remote("get", "lvu1")).vm.state).toBe("running")
    await remote("down", "lvu1")
    await remote("rm", "lvu1", "--yes")
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

  it("its KVM probe through libvirt agrees with the QEMU provider's on this machine, and leaves nothing behind", async () => {
    const direct = await probeKvm("qemu-system-x86_64", { kernel: image.kernel })
    const listsKvm = execFileSync("virsh", ["-c", URI, "capabilities"], { encoding: "utf8" }).includes(
      "<domain type='kvm'"
    )
    // Without KVM libvirt lists none, and no probe is needed: TCG, as the QEMU provider finds.
    if (!listsKvm) return expect(direct.accel).toBe("tcg")
    const dir = join(home, "libvirt-probe")
    const throughLibvirt = await Effect.runPromise(probeKvmOn(URI, { dir, kernel: image.kernel }))
    expect(throughLibvirt.accel).toBe(direct.accel)
    expect(readdirSync(dir)).toEqual([])
    expect(domainsOf("accel-probe")).toEqual([])
  })
})
