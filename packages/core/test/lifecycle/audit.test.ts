import { mkdirSync, readFileSync, rmSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { version } from "../../src/catalog/read-ops.js"
import { harness } from "./harness.js"

describe("stoat.log audit lines", () => {
  it("are appended through one held handle, and a log deleted under it is recreated within a second", async () => {
    const h = harness()
    mkdirSync(join(h.root, "logs"))
    const log = join(h.root, "logs", "stoat.log")
    for (let i = 0; i < 3; i++) await h.ok(version, {})
    expect(readFileSync(log, "utf8").match(/op=host\.version /g)).toHaveLength(3)
    // A person clears the log while a long-lived server keeps writing.
    rmSync(log)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    await h.ok(version, {}, { entrypoint: "mcp" })
    expect(readFileSync(log, "utf8")).toMatch(/^\S+ INFO op=host\.version tool=version entrypoint=mcp request=\S+ ms=\d+ outcome=ok\n$/)
  })
})
