// Runs in a throwaway npm project with a PATH that has no qemu-system-x86_64: withVm must skip
// these tests and say why (or fail them when told to), never pass or vanish silently.
import { describe, expect, it } from "vitest"
import { withVm } from "@stoat/qemu/testing"

describe("withVm on a host without QEMU", () => {
  const vm = withVm({ name: "absent-vm" })

  it("is skipped with the reason", async () => {
    expect((await vm.exec("true")).exit_code).toBe(0)
  })
})

describe("withVm per test on a host without QEMU", () => {
  const vm = withVm({ name: "absent-per-test-vm", scope: "test" })

  it("is skipped with the reason too", async () => {
    expect((await vm.exec("true")).exit_code).toBe(0)
  })
})

describe("withVm that must not skip, on a host without QEMU", () => {
  const vm = withVm({ name: "required-vm", whenQemuMissing: "fail" })

  it("fails with the reason", async () => {
    expect((await vm.exec("true")).exit_code).toBe(0)
  })
})
