import { execFileSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import type { BootPlan } from "@stoat/core"
import { qemuArgs, shellWord } from "../src/argv.js"

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

  it("shellWord survives /bin/sh for hostile paths", () => {
    for (const path of ["/plain/state", "/a b/c", "/it's/x", "/$(reboot)/`id`/x", "/new\nline", "/back\\slash", "/-rf", "/''/\"\"/x", "/*/?/[a]"]) {
      expect(execFileSync("/bin/sh", ["-c", `printf %s ${shellWord(path)}`], { encoding: "utf8" }), path).toBe(path)
    }
  })
})
