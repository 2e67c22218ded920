/**
 * Locks on a full file system: rm and prune take the data-root lock to free space, so taking a
 * lock must write nothing, and a full disk is never reported as a damaged lock file.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync, closeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeLocks } from "../../src/platform/locks.js"

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

describe("locks on a full file system", () => {
  const mount = mkdtempSync(join(tmpdir(), "stoat-full-"))
  beforeAll(() => {
    // A small tmpfs of our own to fill (the suite runs as root, as the e2e suites do).
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mount])
    mkdirSync(join(mount, "vm"))
  })
  afterAll(() => {
    execFileSync("umount", [mount])
    rmSync(mount, { recursive: true, force: true })
  })

  it("are taken with the disk full, for a lock file old or new; a damaged lock file is still invalid_spec", async () => {
    const locks = makeLocks(join(mount, ".lock"), (vm) => join(mount, vm, ".vm.lock"))
    expect(await Effect.runPromise(locks.withRootLock(Effect.succeed("before")))).toBe("before")
    fill(join(mount, "fill"))
    expect(await Effect.runPromise(locks.withRootLock(Effect.succeed("full")))).toBe("full")
    expect(await Effect.runPromise(locks.withVmLock("vm", Effect.succeed("new file")))).toBe("new file")
    rmSync(join(mount, "fill"))
    writeFileSync(join(mount, "vm", ".vm.lock"), "not sqlite at all, and long enough to be read as a header".repeat(4))
    const damaged = await Effect.runPromise(Effect.flip(locks.withVmLock("vm", Effect.void)))
    expect(damaged).toMatchObject({ code: "invalid_spec", subject: join(mount, "vm", ".vm.lock") })
  })
})
