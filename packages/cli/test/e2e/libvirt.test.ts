import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
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

const home = tempHome()
const env = e2eEnv(home)
const json = async (...args: string[]) => {
  const run = await stoat(["--json", ...args], env)
  const envelope = result(run.stdout)
  if (!envelope["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}\n${run.stderr}`)
  return envelope["data"]
}
const failure = async (...args: string[]) => {
  const run = await stoat(["--json", ...args], env)
  const envelope = result(run.stdout)
  if (envelope["ok"]) throw new Error(`stoat ${args.join(" ")} succeeded`)
  return envelope["error"] as { code: string; message: string }
}
const sh = async (vm: string, script: string) => (await json("exec", vm, "--", "sh", "-c", script)) as { exit_code: number; stdout: string; stderr: string }

describe("a libvirt VM with the tiny guest", () => {
  beforeAll(() => requireLibvirt())
  afterAll(async () => {
    for (const vm of ["lva", "lvbad"]) await stoat(["down", vm], env)
  })

  it("is created, started as a libvirt domain, reached, copied to, snapshotted, stopped and removed", async () => {
    const created = (await json("create", "lva", "--image", "tiny", "--provider", "libvirt", "--agent-access", "exec")).vm
    expect(created).toMatchObject({ name: "lva", state: "stopped", provider: "libvirt" })
    expect(readFileSync(join(home, "lva", "vm.toml"), "utf8")).toMatch(/provider = "libvirt"/)
    const started = (await json("up", "lva", "--wait")).vm
    expect(started.state).toBe("running")
    // libvirt runs it: a domain of this VM exists, and ls says where.
    expect(domainsOf("lva")).toHaveLength(1)
    const listed = await stoat(["ls"], env)
    expect(listed.stdout).toMatch(/^lva\s+disk\s+running\s+libvirt:qemu:\/\/\/system\s/m)
    expect(await sh("lva", "uname -s; echo persisted > /data/marker; sync")).toMatchObject({ exit_code: 0, stdout: "Linux\n" })

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
    expect((await json("snapshot", "lva")).snapshots.map((s: { tag: string }) => s.tag).sort()).toEqual(["cold1", "live1"])
    await json("snapshot", "lva", "live1", "--restore")
    await json("up", "lva", "--wait")
    expect((await sh("lva", "cat /data/marker")).stdout).toBe("persisted\n")

    // Checkpoints (and so forks) are not built for libvirt: a typed answer, and the VM runs on.
    const checkpoint = await failure("checkpoint", "lva", "c1")
    expect(checkpoint.code).toBe("capability_unavailable")
    expect((await json("get", "lva")).vm.state).toBe("running")

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
    await json("create", "lvfar", "--image", "tiny", "--provider", "libvirt", "--host", "qemu+unix:///system?socket=/nonexistent/libvirt-sock")
    const refused = await failure("up", "lvfar")
    expect(refused.code).toBe("cannot_reach")
    expect(refused.message).toMatch(/refused the connection.*start the daemon/)
  })
})
