/** A failure's advice in the CLI's own words: its commands, positional arguments and flags, never an MCP tool. */
import { describe, expect, it } from "vitest"
import { homeWith, result, stoat, tempHome, vmToml } from "./helpers.js"

describe("a failure's hint at the CLI", () => {
  it("exec on a stopped VM says to start it with stoat up, in text and JSON (the MCP server says call start)", async () => {
    const home = homeWith({ "dev/vm.toml": vmToml("dev", 2200) })
    const text = await stoat(["exec", "dev", "true"], { STOAT_HOME: home })
    expect(text).toMatchObject({
      code: 1,
      stderr: 'stoat: exec: VM "dev" is not running; start it with stoat up dev\n'
    })
    const json = await stoat(["--json", "exec", "dev", "true"], { STOAT_HOME: home })
    expect(result(json.stdout)["error"]).toEqual({
      code: "not_running",
      message: 'VM "dev" is not running; start it with stoat up dev',
      subject: "dev"
    })
  })

  it("an image not downloaded names the command that downloads it, its id as the positional argument", async () => {
    const run = await stoat(["create", "box", "--image", "debian-13"], { STOAT_HOME: tempHome() })
    expect(run).toMatchObject({
      code: 1,
      stderr: "stoat: create: image debian-13 is not downloaded; download it with stoat pull debian-13\n"
    })
  })
})
