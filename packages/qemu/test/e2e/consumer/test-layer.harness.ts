// Runs in a throwaway npm project that installed @stoat/{wire,core,qemu} from their tarballs.
// No QEMU: the whole catalog runs over the in-memory hypervisor and guest of @stoat/core/testing.
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { createVm, execInGuest, listVms, runOperation, startVm, toErrorInfo, type ExecutionContext } from "@stoat/core"
import { FakeGuestState, testLayer } from "@stoat/core/testing"
import { CONTRACT_VERSION, type ErrorInfo } from "@stoat/wire"

const context: ExecutionContext = { requestId: "consumer-test" }

describe("a harness embedding @stoat/core with testLayer", () => {
  it("creates, starts and execs in a VM, and gets typed errors, without QEMU", async () => {
    const guest = new FakeGuestState()
    guest.execHandler = (argv) => ({ exitCode: 0, stdout: `ran ${argv.join(" ")}\n` })
    const world = Effect.gen(function* () {
      yield* runOperation(createVm, { name: "web", image: "tiny" }, context)
      yield* runOperation(startVm, { vm: "web" }, context)
      const exec = yield* runOperation(execInGuest, { vm: "web", argv: ["uname", "-s"] }, context)
      const vms = yield* runOperation(listVms, {}, context)
      const missing = yield* Effect.exit(runOperation(execInGuest, { vm: "ghost", argv: ["true"] }, context))
      return { exec, vms, missing }
    })
    const { exec, vms, missing } = await Effect.runPromise(Effect.provide(world, testLayer({ guest })))

    expect(CONTRACT_VERSION).toBe(3)
    expect(exec).toMatchObject({ exit_code: 0, stdout: "ran uname -s\n" })
    // Over the wire the command runs under the guest-side timeout wrapper; it ends with the argv.
    expect(guest.execs.map((call) => call.argv.slice(-2))).toEqual([["uname", "-s"]])
    expect(vms.vms.map((vm) => [vm.name, vm.state])).toEqual([["web", "running"]])
    if (Exit.isSuccess(missing)) throw new Error("exec on a VM that does not exist succeeded")
    const error: ErrorInfo = toErrorInfo(missing.cause)
    expect(error).toMatchObject({ code: "not_found", subject: "ghost" })
  })
})
