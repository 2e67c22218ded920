// Runs in a throwaway npm project that installed @stoat/{wire,core,qemu} from their tarballs.
// Real tiny guests under QEMU, reached over ssh2 by the installed @stoat/core.
import { existsSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { withVm } from "@stoat/qemu/testing"

describe("withVm with one VM for the file", () => {
  const vm = withVm({ name: "consumer-vm", whenQemuMissing: "fail" })

  it("runs shell commands and argv in the VM", async () => {
    expect(await vm.exec("hostname; uname -s")).toEqual({ stdout: "consumer-vm\nLinux\n", stderr: "", exit_code: 0 })
    expect(await vm.exec(["sh", "-c", 'printf "%s|" "$@"; exit 3', "sh", "two words", "$HOME"])).toEqual({
      stdout: "two words|$HOME|",
      stderr: "",
      exit_code: 3
    })
    expect(await vm.exec("cat; echo oops >&2", { stdin: "piped in\n" })).toEqual({
      stdout: "piped in\n",
      stderr: "oops\n",
      exit_code: 0
    })
  })

  it("exposes what an ssh client needs", () => {
    expect(vm.user).toBe("root")
    expect(vm.sshPort).toBeGreaterThan(0)
    expect(existsSync(vm.keyPath)).toBe(true)
    expect(existsSync(vm.consoleLog)).toBe(true)
  })
})

describe("withVm with a fresh VM per test", () => {
  const vm = withVm({ name: "per-test-vm", scope: "test", whenQemuMissing: "fail" })

  it("fails on purpose after leaving a marker in its VM", async () => {
    expect((await vm.exec("echo dirty > /root/marker")).exit_code).toBe(0)
    expect.fail("failing on purpose: the VM must be torn down all the same")
  })

  it("gets a VM without the previous test's marker", async () => {
    expect(await vm.exec("test -e /root/marker && echo kept || echo fresh")).toMatchObject({
      stdout: "fresh\n",
      exit_code: 0
    })
  })
})
