/** The in-memory hypervisor keeps the promises every provider keeps (the QEMU provider runs the same cases in its e2e suite). */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Layer } from "effect"
import { afterAll, describe, it } from "vitest"
import { GuestSignals, Hypervisor } from "../../src/ports/hypervisor.js"
import {
  fakeGuestSignals,
  FakeHypervisorState,
  hypervisorContract,
  makeFakeHypervisor
} from "../../src/testing/index.js"

describe("the fake hypervisor keeps the Hypervisor contract", async () => {
  const root = await mkdtemp(join(tmpdir(), "stoat-contract-"))
  afterAll(() => rm(root, { recursive: true, force: true }))
  const layer = Layer.merge(
    Layer.succeed(Hypervisor, makeFakeHypervisor(new FakeHypervisorState())),
    Layer.succeed(GuestSignals, fakeGuestSignals)
  )
  const cases = hypervisorContract(layer, {
    plan: async (name) => {
      const dir = join(root, name)
      await mkdir(dir)
      await writeFile(join(dir, "vm.toml"), "")
      return { vm: { name, dir }, ramMb: 256, cpus: 1, sshPort: 2222, forwards: [], workShare: root, display: "vnc" }
    }
  })
  for (const contractCase of cases) it(contractCase.name, contractCase.run)
})
