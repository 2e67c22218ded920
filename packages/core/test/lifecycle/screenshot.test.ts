import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { createVm, screenshotVm, startVm } from "../../src/operations/index.js"
import { harness } from "../harness.js"

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

describe("screenshot", () => {
  it("writes the provider's PNG where the user asked, making its folder, and reports its size", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const path = join(h.root, "shots", "deep", "web.png")
    const shot = await h.ok(screenshotVm, { vm: "web", path })
    const written = readFileSync(path)
    expect(shot).toEqual({ vm: "web", path, width: 640, height: 480, bytes: written.length })
    expect([...written.subarray(0, 8)]).toEqual(PNG_SIGNATURE)
  })

  it("without a path, names a new file in the VM's screenshots folder each time", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    await h.ok(startVm, { vm: "web" })
    const first = await h.ok(screenshotVm, { vm: "web" })
    const second = await h.ok(screenshotVm, { vm: "web" })
    expect(first.path.startsWith(join(h.vmDir("web"), "screenshots"))).toBe(true)
    expect(second.path).not.toBe(first.path)
    expect(readFileSync(second.path).length).toBe(second.bytes)
  })

  it("a stopped VM is not_running; a path that cannot be written is screenshot_failed", async () => {
    const h = harness()
    await h.ok(createVm, { name: "web", image: "tiny" })
    expect(await h.fail(screenshotVm, { vm: "web" })).toMatchObject({ code: "not_running", subject: "web" })
    await h.ok(startVm, { vm: "web" })
    const file = join(h.root, "a-file")
    writeFileSync(file, "")
    expect(await h.fail(screenshotVm, { vm: "web", path: join(file, "shot.png") })).toMatchObject({
      code: "screenshot_failed",
      subject: "web"
    })
  })
})
