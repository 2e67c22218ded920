import { execFileSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}
const run = async (args: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
  result((await stoat(["--json", ...args], { ...env, ...extra })).stdout)
const json = async (...args: string[]) => {
  const envelope = await run(args)
  if (!envelope["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}`)
  return envelope["data"]
}
const sh = async (vm: string, script: string) =>
  (await json("exec", vm, "--", "sh", "-c", script)) as { exit_code: number; stdout: string; stderr: string }
const FORKS = ["try-1", "try-2", "try-3"]

describe("checkpoint a running tiny guest and fork warm copies", () => {
  beforeAll(async () => {
    requireQemu()
    await json("create", "src", "--image", "tiny", "--agent-access", "exec")
    await json("up", "src", "--wait", "--timeout", "300")
  })
  afterAll(async () => {
    for (const vm of [...FORKS, "src", "solo"]) await stoat(["down", vm], env)
  })

  it("checkpoints the source, which keeps running through it with its share mounted again", async () => {
    // A ticker in the guest: it must go on across the checkpoint, in the same process.
    await sh(
      "src",
      "echo before > /data/mark; echo shared > /mnt/work/seen; sync; (while :; do date +%s >> /tmp/ticks; sleep 0.2; done) > /dev/null 2>&1 & echo $! > /tmp/ticker"
    )
    const taken = await json("checkpoint", "src", "ready")
    expect(taken.checkpoint).toMatchObject({ vm: "src", name: "ready", ram_mb: 256, usable: true, dependents: [] })
    expect(taken.remounted).toEqual(["/mnt/work"])
    expect(taken.checkpoint.state_bytes).toBeGreaterThan(1024 * 1024)
    expect(taken.checkpoint.paused_ms).toBeGreaterThan(0)
    const before = Number((await sh("src", "wc -l < /tmp/ticks")).stdout.trim())
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const after = await sh(
      "src",
      "wc -l < /tmp/ticks; kill -0 $(cat /tmp/ticker) && echo alive; cat /mnt/work/seen; echo later > /data/later; sync"
    )
    const [count, alive, seen] = after.stdout.trim().split("\n")
    expect(Number(count)).toBeGreaterThan(before)
    expect([alive, seen]).toEqual(["alive", "shared"])
    expect((await json("get", "src")).vm.state).toBe("running")
    const listed = await json("checkpoint", "ls", "src")
    expect(listed.checkpoints.map((checkpoint: { name: string }) => checkpoint.name)).toEqual(["ready"])
  })

  it("three forks from one checkpoint run at once, answer SSH, carry the pre-checkpoint file and each its own hostname and share", async () => {
    const forked = await json("fork", "src@ready", "try", "--count", "3")
    expect(forked.forks.map((fork: { vm: { name: string } }) => fork.vm.name)).toEqual(FORKS)
    expect(new Set(forked.forks.map((fork: { vm: { ssh_port: number } }) => fork.vm.ssh_port)).size).toBe(3)
    writeFileSync(join(home, "shared", "try-2", "own"), "mine\n")
    const outputs = await Promise.all(
      FORKS.map((vm) => sh(vm, "cat /data/mark; hostname; ls /data; cat /mnt/work/own 2>/dev/null || echo no-own"))
    )
    for (const [index, output] of outputs.entries()) {
      const lines = output.stdout.trim().split("\n")
      expect(lines.slice(0, 2)).toEqual(["before", FORKS[index]])
      // Written after the checkpoint: the forks do not have it.
      expect(lines).not.toContain("later")
      expect(lines.at(-1)).toBe(index === 1 ? "mine" : "no-own")
    }
    expect((await sh("src", "hostname")).stdout).toBe("src\n")
  })

  it("a file written in one fork is absent from its siblings and from the source", async () => {
    await sh("try-1", "echo fork-one > /data/only-in-one; sync")
    for (const vm of ["try-2", "try-3", "src"])
      expect((await sh(vm, "cat /data/only-in-one 2>/dev/null || echo absent")).stdout, vm).toBe("absent\n")
    expect((await sh("try-1", "cat /data/only-in-one")).stdout).toBe("fork-one\n")
  })

  it("each fork's random numbers differ (its RNG was reseeded on resume)", async () => {
    const draws = await Promise.all(FORKS.map((vm) => sh(vm, "head -c16 /dev/urandom | od -An -tx1 | tr -d ' \\n'")))
    const values = draws.map((draw) => draw.stdout)
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{32}$/)
    expect(new Set(values).size).toBe(3)
    const kernel = await sh("try-1", "dmesg | grep -c 'reseeded due to virtual machine fork'")
    expect(Number(kernel.stdout.trim())).toBeGreaterThanOrEqual(1)
  })

  it("a fork whose QEMU fails to start leaves no VM, folder or process behind", async () => {
    // A qemu-system-x86_64 that refuses to resume anything, first on PATH.
    const bin = mkdtempSync(join(tmpdir(), "stoat-fake-qemu-"))
    const real = execFileSync("sh", ["-c", "command -v qemu-system-x86_64"], { encoding: "utf8" }).trim()
    writeFileSync(
      join(bin, "qemu-system-x86_64"),
      `#!/bin/sh\ncase " $* " in *" -incoming "*) echo "qemu-system-x86_64: simulated failure to resume" >&2; exit 1 ;; esac\nexec ${real} "$@"\n`
    )
    chmodSync(join(bin, "qemu-system-x86_64"), 0o755)
    const failed = await run(["fork", "src@ready", "bad", "--count", "2"], {
      PATH: `${bin}:${process.env["PATH"] ?? ""}`
    })
    expect(failed["ok"]).toBe(false)
    expect(failed["error"]).toMatchObject({ code: "qemu_start_failed" })
    expect(failed["error"]["message"]).toContain("simulated failure")
    const names = ((await json("ls")).vms as Array<{ name: string }>).map((vm) => vm.name)
    expect(names).not.toContain("bad-1")
    expect(names).not.toContain("bad-2")
    expect(readdirSync(home).filter((entry) => entry.startsWith("bad"))).toEqual([])
    expect(existsSync(join(home, "shared", "bad-1"))).toBe(false)
    const processes = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
    expect(processes).not.toContain(join(home, "bad-1"))
  })

  it("refuses a checkpoint name that is taken or not a name, and a fork of an unknown checkpoint", async () => {
    expect((await run(["checkpoint", "src", "ready"]))["error"]).toMatchObject({ code: "name_taken", subject: "ready" })
    expect((await run(["checkpoint", "src", "../x"]))["error"]["code"]).toBe("usage")
    expect((await run(["fork", "src@nope", "x"]))["error"]).toMatchObject({ code: "not_found", subject: "nope" })
    expect((await run(["fork", "src", "x"]))["error"]["code"]).toBe("usage")
  })

  it("a fork is an ordinary VM: it stops, starts cold from its own disk, and keeps what it wrote", async () => {
    await json("down", "try-1")
    await json("up", "try-1", "--wait", "--timeout", "300")
    expect((await sh("try-1", "cat /data/mark /data/only-in-one; hostname")).stdout).toBe("before\nfork-one\ntry-1\n")
  })

  it("destroying the source needs confirmation, refuses while forks run, and then leaves the forks standing on their own", async () => {
    expect((await run(["rm", "src"]))["error"]["code"]).toBe("confirmation_required")
    await json("down", "src")
    const refused = await run(["rm", "-y", "src"])
    expect(refused["error"]["code"]).toBe("in_use")
    expect(refused["error"]["message"]).toContain("try-1")
    for (const vm of FORKS) await json("down", vm)
    expect(await json("rm", "-y", "src")).toEqual({ deleted: true, name: "src" })
    await json("up", "try-2", "--wait", "--timeout", "300")
    expect((await sh("try-2", "cat /data/mark")).stdout).toBe("before\n")
    const info = JSON.parse(
      execFileSync("qemu-img", ["info", "--output=json", "-U", join(home, "try-2", "disk.qcow2")], { encoding: "utf8" })
    )
    expect(info["backing-filename"]).toBeUndefined()
  })
})
