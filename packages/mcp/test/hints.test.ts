/** A failure's advice in the MCP server's own words: its tools and their arguments, never a CLI command an agent cannot type. */
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { dataOf, errorOf, inProcess, unreachableVm } from "./helpers.js"

describe("a failure's hint over MCP", () => {
  let close: (() => Promise<void>) | undefined
  afterEach(async () => {
    await close?.()
    close = undefined
  })

  it("exec on a stopped VM says to call start (the CLI says stoat up); a guest tool before ssh answers says call wait first", async () => {
    const h = await inProcess()
    close = h.close
    dataOf(await h.client.callTool({ name: "create", arguments: { name: "web", image: "tiny", agent_access: "exec" } }))
    const stopped = errorOf(await h.client.callTool({ name: "exec", arguments: { vm: "web", argv: ["true"] } }))
    expect(stopped).toEqual({
      code: "not_running",
      message: 'VM "web" is not running; start it: call start with vm="web"',
      subject: "web"
    })
    await unreachableVm(h.client, h.guest, "slow")
    const early = errorOf(
      await h.client.callTool({ name: "read_file", arguments: { vm: "slow", path: "/etc/hostname" } })
    )
    expect(early.code).toBe("cannot_reach")
    expect(early.message).toMatch(/; call wait first with vm="slow"$/)
  })

  it("an image not downloaded asks a person to download it, since no tool does", async () => {
    const h = await inProcess()
    close = h.close
    const missing = errorOf(await h.client.callTool({ name: "create", arguments: { name: "box", image: "debian-13" } }))
    expect(missing).toMatchObject({
      code: "image_not_downloaded",
      message: 'image debian-13 is not downloaded; download it: ask a person to run stoat pull with id="debian-13"'
    })
  })

  it("a project's per-VM results word their hints as tools too: a VM not created yet says call project_up", async () => {
    const projectDir = mkdtempSync(join(tmpdir(), "stoat-mcp-hints-"))
    writeFileSync(join(projectDir, "stoat.toml"), 'schema = 1\n[project]\nname = "hints"\n[vms.web]\nimage = "tiny"\n')
    const h = await inProcess({ projectDir })
    close = h.close
    const waited = dataOf<{ vms: Array<{ status: string; error?: string }> }>(
      await h.client.callTool({ name: "project_wait", arguments: { timeout_seconds: 1 } })
    )
    expect(waited.vms[0]).toMatchObject({
      status: "error",
      error: 'VM "hints-web" ([vms.web]) is not created yet; create it: call project_up'
    })
  })
})
