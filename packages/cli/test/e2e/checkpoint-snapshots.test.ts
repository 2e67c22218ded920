import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}
const run = async (args: ReadonlyArray<string>) => result((await stoat(["--json", ...args], env)).stdout)
const json = async (...args: string[]) => {
  const envelope = await run(args)
  if (!envelope["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(envelope["error"])}`)
  return envelope["data"]
}
const sh = async (vm: string, script: string) =>
  (await json("exec", vm, "--", "sh", "-c", script)) as { exit_code: number; stdout: string; stderr: string }
const tags = async (vm: string) =>
  ((await json("snapshot", vm)).snapshots as Array<{ tag: string }>).map((snapshot) => snapshot.tag).sort()
const VMS = ["src", "late", "kept"]

describe("snapshots and clocks across a checkpoint of the tiny guest", () => {
  beforeAll(async () => {
    requireQemu()
    await json("create", "src", "--image", "tiny", "--agent-access", "exec")
    await json("up", "src", "--wait", "--timeout", "300")
  })
  afterAll(async () => {
    for (const vm of VMS) await stoat(["down", vm], env)
  })

  it("a fork started well after its checkpoint reads the host's time, not the checkpoint's", async () => {
    await json("checkpoint", "src", "clock")
    // Long enough that the checkpoint's clock is plainly behind, whatever the load.
    await new Promise((resolve) => setTimeout(resolve, 6000))
    await json("fork", "src@clock", "late")
    const before = Date.now() / 1000
    const guest = Number((await sh("late", "date +%s")).stdout.trim())
    const after = Date.now() / 1000
    expect(guest).toBeGreaterThanOrEqual(Math.floor(before) - 1)
    expect(guest).toBeLessThanOrEqual(Math.ceil(after) + 1)
    await json("down", "late")
  })

  it("a snapshot taken before a checkpoint stays listed and restores the disk as it was, leaving the checkpoint and its fork intact", async () => {
    await sh("src", "echo one > /data/v; sync")
    await json("snapshot", "src", "before-ck")
    await sh("src", "echo two > /data/v; sync")
    await json("checkpoint", "src", "ready")
    expect(await tags("src")).toEqual(["before-ck"])
    await sh("src", "echo three > /data/v; sync")
    await json("snapshot", "src", "after-ck")
    expect(await tags("src")).toEqual(["after-ck", "before-ck"])
    await json("fork", "src@ready", "kept")

    await json("down", "src")
    await json("snapshot", "src", "before-ck", "--restore")
    expect(await tags("src")).toEqual(["after-ck", "before-ck"])
    await json("up", "src", "--wait", "--timeout", "300")
    expect((await sh("src", "cat /data/v")).stdout).toBe("one\n")

    // The checkpoint's frozen disk did not change: its fork reads what it read, and it still forks.
    expect((await sh("kept", "cat /data/v")).stdout).toBe("two\n")
    expect(
      (await json("checkpoint", "ls", "src")).checkpoints.find(
        (checkpoint: { name: string }) => checkpoint.name === "ready"
      )
    ).toMatchObject({ usable: true, dependents: ["kept"] })
    expect((await run(["snapshot", "src", "before-ck", "--delete"]))["error"]).toMatchObject({
      code: "in_use",
      subject: "before-ck"
    })

    await json("down", "src")
    await json("snapshot", "src", "after-ck", "--restore")
    await json("up", "src", "--wait", "--timeout", "300")
    expect((await sh("src", "cat /data/v")).stdout).toBe("three\n")
    expect(await tags("src")).toEqual(["after-ck", "before-ck"])
  })
})
