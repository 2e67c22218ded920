/**
 * The QEMU provider keeps the promises of core's Hypervisor and GuestSignals ports, checked by
 * the same cases the in-memory fake runs in core's unit tests, booting the real tiny guest.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Layer } from "effect"
import { afterAll, beforeAll, describe, it } from "vitest"
import { dataRootAt } from "@stoat/core"
import { hypervisorContract } from "@stoat/core/testing"
import { makeQemuHypervisor, QemuGuestSignalsLive } from "../../src/hypervisor.js"
import { buildTinyGuest, type TinyGuestImage } from "../../src/tiny/build.js"
import { requireQemu, tinyCacheDir, tinyGuestPlan } from "../support.js"

describe("the QEMU provider keeps the Hypervisor contract", async () => {
  const root = await mkdtemp(join(tmpdir(), "stoat-qemu-contract-"))
  let image: TinyGuestImage
  beforeAll(async () => {
    requireQemu()
    image = await buildTinyGuest({ cacheDir: join(tinyCacheDir, "debs"), outDir: join(tinyCacheDir, "image") })
  }, 600_000)
  afterAll(() => rm(root, { recursive: true, force: true }))

  const layer = Layer.merge(makeQemuHypervisor({ tinyCacheDir }), QemuGuestSignalsLive).pipe(
    Layer.provide(dataRootAt(root))
  )
  const cases = hypervisorContract(layer, {
    plan: async (name) => {
      const plan = await tinyGuestPlan(root, image, name)
      await writeFile(join(plan.vm.dir, "vm.toml"), "")
      return plan
    }
  })
  for (const contractCase of cases) it(contractCase.name, contractCase.run, 300_000)
})
