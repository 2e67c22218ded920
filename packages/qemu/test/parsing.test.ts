/** Pure pieces: the snapshot table parser, size syntax, PNG header, argv. No QEMU needed. */
import { forwardNotBound } from "../src/lifecycle.js"
import { describe, expect, it } from "vitest"
import type { BootPlan } from "@stoat/core"
import { qemuArgs, vmFiles } from "../src/argv.js"
import { parseSize } from "../src/qemu-img.js"
import { pngSize } from "../src/screenshot.js"
import { parseDisplaySize, parseSnapshotRows, parseSnapshotTable } from "../src/snapshot-table.js"

const localRfc3339 = (y: number, mo: number, d: number, h: number, mi: number, s: number) =>
  new Date(y, mo - 1, d, h, mi, s).toISOString().replace(/\.000Z$/, "Z")

describe("snapshot table", () => {
  it("reads qemu-img snapshot -l (stopped disk)", () => {
    const text = [
      "Snapshot list:",
      "ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT",
      "1         blank                 0 B 2026-11-30 07:29:40 00:00:00.000          0",
      "2         before-upgrade     1.5 MiB 2026-12-01 23:05:09 00:01:02.345          0",
      ""
    ].join("\n")
    expect(parseSnapshotTable(text)).toEqual([
      {
        tag: "blank",
        vm_state: "stopped",
        size_display: "0 B",
        created_display: "2026-11-30 07:29:40",
        created: localRfc3339(2026, 11, 30, 7, 29, 40),
        size_bytes: 0
      },
      {
        tag: "before-upgrade",
        vm_state: "running",
        size_display: "1.5 MiB",
        created_display: "2026-12-01 23:05:09",
        created: localRfc3339(2026, 12, 1, 23, 5, 9),
        size_bytes: 1572864
      }
    ])
  })

  it("reads HMP info snapshots of a running VM: -- ids, CRLF, blank ICOUNT", () => {
    const text =
      "List of snapshots present on all disks:\r\n" +
      "ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\r\n" +
      "--        s1                    0 B 2026-11-30 07:29:40 00:00:00.000          0\r\n" +
      "--        live1                 0 B 2026-11-30 07:29:50 00:00:04.781           \r\n"
    const rows = parseSnapshotRows(text)
    expect(rows.map((row) => [row.id, row.snapshot.tag, row.snapshot.vm_state])).toEqual([
      ["--", "s1", "stopped"],
      ["--", "live1", "running"]
    ])
  })

  it("reads older QEMUs that glue the unit to the size", () => {
    const text = [
      "ID        TAG                 VM SIZE                DATE       VM CLOCK",
      "1         old                    1.2M 2019-03-04 05:06:07   00:00:12.000"
    ].join("\n")
    expect(parseSnapshotTable(text)).toMatchObject([
      { tag: "old", size_display: "1.2M", size_bytes: 1258291, vm_state: "running" }
    ])
  })

  it("finds no rows in notes and empty output", () => {
    expect(parseSnapshotTable("There is no snapshot available.\n")).toEqual([])
    expect(parseSnapshotTable("")).toEqual([])
    expect(parseSnapshotTable("List of snapshots present on all disks:\r\nNone\r\n")).toEqual([])
  })

  it("keeps tags that look like numbers or dates apart from the columns", () => {
    const text =
      "3         2026-01-01            0 B 2026-11-30 07:29:40 00:00:00.000          0\n4         7                     0 B 2026-11-30 07:29:41 00:00:00.000          0"
    expect(parseSnapshotRows(text).map((row) => [row.id, row.snapshot.tag])).toEqual([
      ["3", "2026-01-01"],
      ["4", "7"]
    ])
  })

  it("converts display sizes", () => {
    expect(parseDisplaySize("0 B")).toBe(0)
    expect(parseDisplaySize("512 KiB")).toBe(524288)
    expect(parseDisplaySize("2 GiB")).toBe(2 * 1024 ** 3)
    expect(parseDisplaySize("garbage")).toBe(0)
  })
})

describe("qemu-img size syntax", () => {
  it("parses sizes in 1024 units rounded up to sectors", () => {
    expect(parseSize("10G")).toEqual({ bytes: 10 * 1024 ** 3, relative: false })
    expect(parseSize("512m")).toEqual({ bytes: 512 * 1024 ** 2, relative: false })
    expect(parseSize("1.5G")).toEqual({ bytes: 1.5 * 1024 ** 3, relative: false })
    expect(parseSize("+1G")).toEqual({ bytes: 1024 ** 3, relative: true })
    expect(parseSize("1000")).toEqual({ bytes: 1024, relative: false })
    expect(parseSize("2GiB")).toEqual({ bytes: 2 * 1024 ** 3, relative: false })
    expect(parseSize("ten")).toBeUndefined()
    expect(parseSize("-1G")).toBeUndefined()
  })
})

describe("PNG header", () => {
  it("reads width and height from IHDR", () => {
    const png = Buffer.alloc(33)
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(png)
    png.writeUInt32BE(13, 8)
    png.write("IHDR", 12, "latin1")
    png.writeUInt32BE(720, 16)
    png.writeUInt32BE(400, 20)
    expect(pngSize(png)).toEqual({ width: 720, height: 400 })
    expect(pngSize(Buffer.from("P6\n720 400\n255\n"))).toBeUndefined()
  })
})

describe("qemu argv", () => {
  const dir = "/home/u/.stoat/web"
  const plan: BootPlan = {
    vm: { name: "web", dir },
    ramMb: 512,
    cpus: 2,
    sshPort: 2201,
    forwards: [{ host: 8080, guest: 80 }],
    workShare: "/home/u/.stoat/shared/web",
    display: "vnc"
  }
  const after = (args: string[], flag: string) => args.filter((_, index) => args[index - 1] === flag)

  it("boots under the probed accelerator with the files in the VM folder", () => {
    const tcg = qemuArgs(plan, { accel: "tcg" })
    expect(after(tcg, "-accel")).toEqual(["tcg"])
    expect(after(qemuArgs(plan, { accel: "kvm" }), "-accel")).toEqual(["kvm"])
    expect(after(tcg, "-m")).toEqual(["512"])
    expect(after(tcg, "-smp")).toEqual(["2"])
    expect(after(tcg, "-pidfile")).toEqual([vmFiles(dir).pidfile])
    expect(tcg).toContain("-daemonize")
    expect(after(tcg, "-qmp")).toEqual([`unix:${dir}/qmp.sock,server=on,wait=off`])
    expect(after(tcg, "-chardev")).toEqual([`file,id=con0,path=${dir}/console.log,append=on`])
    expect(after(tcg, "-serial")).toEqual(["chardev:con0"])
    expect(after(tcg, "-display")).toEqual(["none"])
    expect(after(tcg, "-vnc")).toEqual([`unix:${dir}/vnc.sock`])
    expect(after(tcg, "-netdev")).toEqual(["user,id=n0,hostfwd=tcp:127.0.0.1:2201-:22,hostfwd=tcp:127.0.0.1:8080-:80"])
    expect(after(tcg, "-device")).toEqual(expect.arrayContaining(["virtio-net-pci,netdev=n0", "virtio-rng-pci"]))
    expect(after(tcg, "-virtfs")).toEqual([
      `local,path=/home/u/.stoat/shared/web,mount_tag=work,security_model=mapped-xattr,id=work`
    ])
    expect(tcg).not.toContain("-kernel")
    expect(tcg).not.toContain("-cpu")
  })

  it("adds the disk, media, shares and a direct kernel", () => {
    const args = qemuArgs(
      {
        ...plan,
        disk: "disk.qcow2",
        seedIso: { vm: plan.vm, file: "ovl/seed.iso" },
        hostShare: "/srv/data,v2",
        extraShares: [{ tag: "src", host: "/p/src" }],
        kernel: { path: "/img/vmlinux", initrd: "/img/initrd.img", append: "console=ttyS0 quiet" },
        cpuModel: "host"
      },
      { accel: "tcg", initrd: `${dir}/initrd.img` }
    )
    expect(after(args, "-drive")).toEqual([
      `file=${dir}/disk.qcow2,if=none,id=d0,format=qcow2,discard=unmap`,
      `file=${dir}/ovl/seed.iso,if=none,id=seed0,media=cdrom,readonly=on`
    ])
    // The kernel takes bootindex 0.
    expect(after(args, "-device")).toContain("virtio-blk-pci,drive=d0")
    expect(after(args, "-virtfs")).toEqual([
      "local,path=/home/u/.stoat/shared/web,mount_tag=work,security_model=mapped-xattr,id=work",
      // A comma in a path is doubled so QEMU does not read it as an option separator.
      "local,path=/srv/data,,v2,mount_tag=host,security_model=mapped-xattr,readonly=on,id=host",
      "local,path=/p/src,mount_tag=src,security_model=mapped-xattr,id=share0"
    ])
    expect(after(args, "-kernel")).toEqual(["/img/vmlinux"])
    expect(after(args, "-initrd")).toEqual([`${dir}/initrd.img`])
    expect(after(args, "-append")).toEqual(["console=ttyS0 quiet"])
    // "host" needs KVM.
    expect(after(args, "-cpu")).toEqual(["max"])
  })

  it("boots an install ISO first until the OS is installed", () => {
    const iso = "/home/u/.stoat/isos/alpine.iso"
    const installing = qemuArgs({ ...plan, disk: "disk.qcow2", cdrom: iso, bootFromCdrom: true }, { accel: "tcg" })
    expect(after(installing, "-device")).toEqual(
      expect.arrayContaining(["virtio-blk-pci,drive=d0,bootindex=1", "ide-cd,drive=cd0,bus=ide.0,bootindex=0"])
    )
    const installed = qemuArgs({ ...plan, disk: "disk.qcow2", cdrom: iso }, { accel: "tcg", diskFormat: "raw" })
    expect(after(installed, "-device")).toEqual(
      expect.arrayContaining(["virtio-blk-pci,drive=d0,bootindex=0", "ide-cd,drive=cd0,bus=ide.0,bootindex=1"])
    )
    expect(after(installed, "-drive")[0]).toContain("format=raw")
  })

  it("opens a window when asked", () => {
    const args = qemuArgs({ ...plan, display: "window" }, { accel: "kvm" })
    expect(after(args, "-display")).toEqual(["gtk,gl=on"])
    expect(args).not.toContain("-vnc")
  })
})

describe("forwardNotBound", () => {
  it("names the host port of a forward QEMU could not set up, and nothing for other failures", () => {
    expect(
      forwardNotBound(
        "qemu-system-x86_64: -netdev user,id=n0,hostfwd=tcp:127.0.0.1:2201-:22: Could not set up host forwarding rule 'tcp:127.0.0.1:2201-:22'\n"
      )
    ).toBe(2201)
    expect(
      forwardNotBound("qemu-system-x86_64: -drive file=/x: Could not open '/x': No such file or directory\n")
    ).toBeUndefined()
  })
})
