import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import type { BootPlan } from "@stoat/core"
import { Effect, Either } from "effect"
import { qemuArgs, shellWord } from "../src/argv.js"
import { savedSeed } from "../src/checkpoint.js"

const plan: BootPlan = {
  vm: { name: "f", dir: "/vm/f" },
  ramMb: 256,
  cpus: 1,
  sshPort: 2300,
  forwards: [],
  disk: "disk.qcow2",
  kernel: { path: "/img/vmlinux", initrd: "/img/initrd.img", append: "console=ttyS0" },
  workShare: "/shared/f",
  display: "vnc"
}

describe("argv for checkpoints and resumes", () => {
  it("every VM gets a VM generation ID device and boots SeaBIOS (qboot cannot place the ID)", () => {
    const args = qemuArgs(plan, { accel: "tcg" })
    expect(args.join(" ")).toContain("-device vmgenid,guid=auto")
    expect(args).not.toContain("qboot.rom")
    expect(args).not.toContain("-incoming")
  })

  it("a resume reads its state through the shell, the path quoted as one word", () => {
    const args = qemuArgs(plan, { accel: "tcg", incomingState: "/data root/it's $(here)/state" })
    expect(args[args.indexOf("-incoming") + 1]).toBe(`exec:cat ${shellWord("/data root/it's $(here)/state")}`)
  })

  it("a fork of a cloud VM keeps reading its source's seed, named as the source's file", () => {
    const source = { name: "web", dir: "/vm/web" }
    const args = qemuArgs({ ...plan, seedIso: { vm: source, file: "ovl/seed.iso" } }, { accel: "tcg" })
    expect(args).toContain("file=/vm/web/ovl/seed.iso,if=none,id=seed0,media=cdrom,readonly=on")
  })

  it("a checkpoint saved when seeds were host paths resumes with that seed; any other path is refused", () => {
    const target = plan.vm
    const seed = (value: string) => Effect.runSync(Effect.either(savedSeed(value, target)))
    expect(seed("/data/web/ovl/seed.iso")).toEqual(
      Either.right({ vm: { name: "web", dir: "/data/web" }, file: "ovl/seed.iso" })
    )
    const given = { vm: { name: "web", dir: "/data/web" }, file: "ovl/seed.iso" }
    expect(Effect.runSync(savedSeed(given, target))).toBe(given)
    expect(Effect.runSync(savedSeed(undefined, target))).toBeUndefined()
    for (const bad of ["ovl/seed.iso", "/etc/passwd", "/data/web/ovl/../seed.iso"]) {
      const refused = seed(bad)
      expect(Either.isLeft(refused) && refused.left.code, bad).toBe("qemu_start_failed")
    }
  })

  it("shellWord survives /bin/sh for hostile paths", () => {
    for (const path of [
      "/plain/state",
      "/a b/c",
      "/it's/x",
      "/$(reboot)/`id`/x",
      "/new\nline",
      "/back\\slash",
      "/-rf",
      "/''/\"\"/x",
      "/*/?/[a]"
    ]) {
      expect(execFileSync("/bin/sh", ["-c", `printf %s ${shellWord(path)}`], { encoding: "utf8" }), path).toBe(path)
    }
  })
})
