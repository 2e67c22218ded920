/** Disks and stopped-VM snapshots through the Hypervisor layer, against the real qemu-img. */
import { execFileSync } from "node:child_process"
import { existsSync } from "node:fs"
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VmDisk, VmRef } from "@stoat/core"
import { call, ok, requireQemu } from "./support.js"

const GiB = 1024 ** 3

describe("qemu-img", () => {
  let root: string
  let vm: VmRef
  let disk: VmDisk
  /** A disk file of the VM, as core names it. */
  const inVm = (file: string): VmDisk => ({ vm, file })

  beforeAll(async () => {
    requireQemu()
    root = await mkdtemp(join(tmpdir(), "stoat-img-"))
    vm = { name: "img", dir: join(root, "img") }
    await mkdir(vm.dir)
    disk = inVm("disk.qcow2")
  })
  afterAll(async () => {
    await rm(root, { recursive: true, force: true })
  })

  it("creates a qcow2 disk and reports it", async () => {
    await ok(root, (h) => h.createDisk(disk, "1G"))
    const info = await ok(root, (h) => h.diskInfo(disk))
    expect(info).toMatchObject({ virtualSize: GiB, format: "qcow2" })
    expect(info.actualSize).toBeGreaterThan(0)
    expect(info.backing).toBeUndefined()
  })

  it("creates an overlay on an absolute backing file, with the backing format detected", async () => {
    const base = join(root, "base.raw")
    execFileSync("qemu-img", ["create", "-q", "-f", "raw", base, "64M"])
    const overlay = inVm("overlay.qcow2")
    await ok(root, (h) => h.createDisk(overlay, "", { image: base }))
    expect(await ok(root, (h) => h.diskInfo(overlay))).toMatchObject({
      virtualSize: 64 * 1024 ** 2,
      format: "qcow2",
      backing: { image: base }
    })
    const json = JSON.parse(
      execFileSync("qemu-img", ["info", "--output=json", join(vm.dir, "overlay.qcow2")], { encoding: "utf8" })
    ) as Record<string, unknown>
    expect(json["backing-filename-format"]).toBe("raw")
    // A larger overlay than its base is how a cloud VM gets its disk size.
    const grown = inVm("grown.qcow2")
    await ok(root, (h) => h.createDisk(grown, "2G", { image: base }))
    expect((await ok(root, (h) => h.diskInfo(grown))).virtualSize).toBe(2 * GiB)
  })

  it("refuses an overlay on a missing base", async () => {
    const result = await call(root, (h) => h.createDisk(inVm("x.qcow2"), "", { image: join(root, "missing.qcow2") }))
    expect(Either.isLeft(result) && result.left._tag).toBe("Internal")
  })

  it("grows, keeps the same size, and refuses to shrink", async () => {
    await ok(root, (h) => h.resizeDisk(disk, "2G"))
    expect((await ok(root, (h) => h.diskInfo(disk))).virtualSize).toBe(2 * GiB)
    await ok(root, (h) => h.resizeDisk(disk, "+512M"))
    expect((await ok(root, (h) => h.diskInfo(disk))).virtualSize).toBe(2.5 * GiB)
    await ok(root, (h) => h.resizeDisk(disk, "2560M"))
    const shrink = await call(root, (h) => h.resizeDisk(disk, "1G"))
    expect(Either.isLeft(shrink) && shrink.left.code).toBe("disk_shrink")
    expect((await ok(root, (h) => h.diskInfo(disk))).virtualSize).toBe(2.5 * GiB)
    const bad = await call(root, (h) => h.resizeDisk(disk, "lots"))
    expect(Either.isLeft(bad) && bad.left.code).toBe("internal")
  })

  it("answers not_found for a missing disk, of a VM or a base image", async () => {
    for (const missing of [inVm("nope.qcow2"), { image: join(root, "nope.qcow2") }]) {
      const result = await call(root, (h) => h.diskInfo(missing))
      expect(Either.isLeft(result) && result.left.code).toBe("not_found")
    }
  })

  it("builds an overlay on another VM's disk, and rebases it to stand alone", async () => {
    const other = { name: "other", dir: join(root, "other") }
    await mkdir(other.dir)
    const clone = { vm: other, file: "disk.qcow2" }
    await ok(root, (h) => h.createDisk(clone, "", disk))
    // QEMU records a host path; the port answers with a reference: a VM's disk once its folder
    // holds a vm.toml, and until then (a folder of the data root that is no VM) a base image.
    expect((await ok(root, (h) => h.diskInfo(clone))).backing).toEqual({ image: join(vm.dir, "disk.qcow2") })
    await writeFile(join(vm.dir, "vm.toml"), 'name = "img"\n')
    expect((await ok(root, (h) => h.diskInfo(clone))).backing).toEqual({ vm, file: "disk.qcow2" })
    await ok(root, (h) => h.rebaseDisk(clone, undefined))
    expect((await ok(root, (h) => h.diskInfo(clone))).backing).toBeUndefined()
  })

  it("never reaches outside a VM's folder by a file name", async () => {
    await expect(call(root, (h) => h.diskInfo(inVm("../img/disk.qcow2")))).rejects.toThrow(
      /not a file inside the folder of VM "img"/
    )
  })

  it("saves, lists, restores and deletes snapshots of a stopped VM", async () => {
    const t0 = performance.now()
    await ok(root, (h) => h.saveSnapshot(disk, "first"))
    const saveMs = performance.now() - t0
    await ok(root, (h) => h.saveSnapshot(disk, "second"))
    const list = await ok(root, (h) => h.listSnapshots(disk))
    expect(list.map((snapshot) => snapshot.tag).sort()).toEqual(["first", "second"])
    for (const snapshot of list) {
      expect(snapshot).toMatchObject({ vm_state: "stopped", size_display: "0 B", size_bytes: 0 })
      expect(snapshot.created).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
      expect(Math.abs(Date.parse(snapshot.created) - Date.now())).toBeLessThan(60_000)
    }

    const t1 = performance.now()
    await ok(root, (h) => h.restoreSnapshot(disk, "second"))
    const restoreMs = performance.now() - t1

    const t2 = performance.now()
    await ok(root, (h) => h.deleteSnapshot(disk, "first"))
    const deleteMs = performance.now() - t2
    expect((await ok(root, (h) => h.listSnapshots(disk))).map((snapshot) => snapshot.tag)).toEqual(["second"])
    // Deleting a tag that is not there is nothing to do (not_found is core's rule).
    await ok(root, (h) => h.deleteSnapshot(disk, "first"))
    console.log(
      `stopped snapshot: save ${saveMs.toFixed(0)} ms, restore ${restoreMs.toFixed(0)} ms, delete ${deleteMs.toFixed(0)} ms`
    )
  })

  it("deletes every twin of a tag that qemu-img created twice", async () => {
    execFileSync("qemu-img", ["snapshot", "-c", "twin", join(vm.dir, "disk.qcow2")])
    execFileSync("qemu-img", ["snapshot", "-c", "twin", join(vm.dir, "disk.qcow2")])
    await ok(root, (h) => h.deleteSnapshot(disk, "twin"))
    expect((await ok(root, (h) => h.listSnapshots(disk))).map((snapshot) => snapshot.tag)).toEqual(["second"])
  })

  it("will not restore a tag that qemu-img would read as another snapshot's id", async () => {
    // "second" has id 2 by now; a snapshot tagged "2" is ambiguous for `qemu-img snapshot -a 2`.
    const ids = execFileSync("qemu-img", ["snapshot", "-l", join(vm.dir, "disk.qcow2")], { encoding: "utf8" })
    const id = /^(\d+)\s+second\s/m.exec(ids)?.[1] ?? "?"
    await ok(root, (h) => h.saveSnapshot(disk, id))
    const result = await call(root, (h) => h.restoreSnapshot(disk, id))
    expect(Either.isLeft(result) && result.left.message).toMatch(/also the id of another snapshot/)
    await ok(root, (h) => h.deleteSnapshot(disk, id))
  })

  it("makes an overlay that reads as a snapshot of a frozen file below, and changes no existing file", async () => {
    const frozen = { name: "frozen", dir: join(root, "frozen") }
    await mkdir(join(frozen.dir, "layers"), { recursive: true })
    const file = (name: string) => join(frozen.dir, name)
    const io = (path: string, ...commands: string[]) =>
      execFileSync("qemu-io", [...commands.flatMap((command) => ["-c", command]), path])
    execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", file("base.qcow2"), "4M"])
    io(file("base.qcow2"), "write -P 1 0 1M")
    execFileSync("qemu-img", [
      "create",
      "-q",
      "-f",
      "qcow2",
      "-b",
      file("base.qcow2"),
      "-F",
      "qcow2",
      file("disk.qcow2")
    ])
    io(file("disk.qcow2"), "write -P 2 0 64k", "write -P 3 1M 64k")
    execFileSync("qemu-img", ["snapshot", "-c", "before", file("disk.qcow2")])
    execFileSync("qemu-img", ["convert", "-O", "raw", file("disk.qcow2"), file("expected.raw")])
    // After the snapshot: changed in the frozen file, then in the overlay above it (zeroes too).
    io(file("disk.qcow2"), "write -P 4 0 64k", "write -P 5 2M 64k", "write -z 512k 64k")
    execFileSync("qemu-img", [
      "create",
      "-q",
      "-f",
      "qcow2",
      "-b",
      file("disk.qcow2"),
      "-F",
      "qcow2",
      file("layers/top.qcow2")
    ])
    io(file("layers/top.qcow2"), "write -P 6 3M 64k", "write -P 7 1M 64k")
    const sums = () =>
      execFileSync("sha256sum", [file("base.qcow2"), file("disk.qcow2"), file("layers/top.qcow2")], {
        encoding: "utf8"
      })
    const before = sums()

    await ok(root, (h) =>
      h.snapshotOverlay(
        { vm: frozen, file: "disk.qcow2" },
        "before",
        { vm: frozen, file: "layers/new.qcow2" },
        { vm: frozen, file: "layers/top.qcow2" }
      )
    )
    expect(
      execFileSync(
        "qemu-img",
        ["compare", "-f", "raw", "-F", "qcow2", file("expected.raw"), file("layers/new.qcow2")],
        { encoding: "utf8" }
      )
    ).toContain("identical")
    expect((await ok(root, (h) => h.diskInfo({ vm: frozen, file: "layers/new.qcow2" }))).backing).toEqual({
      image: file("layers/top.qcow2")
    })
    expect(sums()).toBe(before)
    const missing = await call(root, (h) =>
      h.snapshotOverlay(
        { vm: frozen, file: "disk.qcow2" },
        "nope",
        { vm: frozen, file: "layers/bad.qcow2" },
        { vm: frozen, file: "layers/top.qcow2" }
      )
    )
    expect(Either.isLeft(missing) && missing.left.code).toBe("internal")
    expect(existsSync(file("layers/bad.qcow2"))).toBe(false)
  })

  it("reports missing QEMU binaries as qemu_missing", async () => {
    const path = process.env["PATH"]
    process.env["PATH"] = join(root, "empty-bin")
    try {
      const create = await call(root, (h) => h.createDisk(inVm("new.qcow2"), "1G"))
      expect(Either.isLeft(create) && create.left.code).toBe("qemu_missing")
      const start = await call(root, (h) =>
        h.start({ vm, ramMb: 256, cpus: 1, sshPort: 2222, forwards: [], workShare: root, display: "vnc" })
      )
      expect(Either.isLeft(start) && start.left.code).toBe("qemu_missing")
      // Snapshot operations have no qemu_missing in their contract.
      const list = await call(root, (h) => h.listSnapshots(disk))
      expect(Either.isLeft(list) && list.left.code).toBe("internal")
    } finally {
      process.env["PATH"] = path
    }
  })

  it("answers no_disk when the VM has no disk", async () => {
    const none = inVm("none.qcow2")
    const codes = [
      await call(root, (h) => h.listSnapshots(none)),
      await call(root, (h) => h.saveSnapshot(none, "x")),
      await call(root, (h) => h.restoreSnapshot(none, "x")),
      await call(root, (h) => h.deleteSnapshot(none, "x"))
    ].map((result: Either.Either<unknown, { readonly code: string }>) => Either.isLeft(result) && result.left.code)
    expect(codes).toEqual(["no_disk", "no_disk", "no_disk", "no_disk"])
  })
})
