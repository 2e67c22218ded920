/**
 * A data root on a full file system (a small tmpfs of its own, filled): every command says the
 * disk is full with the free space, never that a lock file is damaged; rm and prune still work,
 * since they are how space is freed; doctor reports the free space.
 */
import { execFileSync } from "node:child_process"
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { e2eEnv, requireQemu, result, stoat } from "../helpers.js"

const mount = mkdtempSync(join(tmpdir(), "stoat-full-"))
const home = join(mount, "home")
const env = e2eEnv(home)
const run = async (...args: string[]) => result((await stoat(["--json", ...args], env)).stdout)

/** Writes zeros until the file system says ENOSPC. */
const fill = (path: string) => {
  const fd = openSync(path, "w")
  const chunk = Buffer.alloc(64 * 1024)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (error) {
    if ((error as { code?: string }).code !== "ENOSPC") throw error
  } finally {
    closeSync(fd)
  }
}

describe("a data root on a full file system", () => {
  beforeAll(async () => {
    requireQemu()
    // The suites run as root (they mount nothing else); a tmpfs is a file system we may fill.
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", mount])
    expect((await run("create", "keep", "--image", "tiny"))["ok"]).toBe(true)
    fill(join(mount, "fill"))
  })
  afterAll(() => {
    execFileSync("umount", [mount])
    rmSync(mount, { recursive: true, force: true })
  })

  it("create and up are limit_reached naming the path and free space; ls, doctor, prune and rm work", async () => {
    const refused = await run("create", "more", "--image", "tiny")
    expect(refused["error"]).toMatchObject({ code: "limit_reached", available_mb: 0 })
    expect(refused["error"]["message"]).toMatch(/No space left on device: the file system is full \(0 MiB free at /)
    expect(refused["error"]["message"]).toContain(
      "; free some space (or delete a VM you no longer need) with stoat prune --apply --images"
    )
    expect(refused["error"]["message"]).not.toMatch(/lock file/)
    expect(existsSync(join(home, "more"))).toBe(false)

    const start = await run("up", "keep", "--no-wait")
    expect(start["error"]).toMatchObject({ code: "limit_reached", available_mb: 0 })
    // The first file a start writes (its ssh key, the guest's initrd) does not fit.
    expect(start["error"]["message"]).toMatch(/: the file system is full \(0 MiB free at /)

    expect((await run("ls"))["data"]["vms"]).toMatchObject([{ name: "keep", state: "stopped" }])
    const doctor = (await run("doctor"))["data"]
    expect(doctor.healthy).toBe(false)
    expect(doctor.checks.find((check: { name: string }) => check.name === "data-root")).toMatchObject({
      ok: false,
      optional: false,
      detail: `${home}: 0 MiB free of 8 MiB; under 256 MiB, VMs cannot start or write`
    })

    expect(await run("prune", "--apply", "--broken", "--images")).toMatchObject({
      ok: true,
      data: { dry_run: false, items: [] }
    })
    expect(await run("rm", "keep", "-y")).toMatchObject({ ok: true, data: { deleted: true, name: "keep" } })
    expect(existsSync(join(home, "keep"))).toBe(false)
    // The lock file nobody was told to delete is still there.
    expect(existsSync(join(home, ".lock"))).toBe(true)
  })
})
