import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { version } from "../../src/operations/read.js"
import { harness } from "../harness.js"

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
    await h.ok(version, {}, { caller: "mcp" })
    expect(readFileSync(log, "utf8")).toMatch(
      /^\S+ INFO op=host\.version tool=version entrypoint=mcp request=\S+ ms=\d+ outcome=ok\n$/
    )
  })

  it("are not written to a root without a logs folder, and are written from the first call after one appears", async () => {
    const h = harness()
    const logs = join(h.root, "logs")
    rmSync(logs, { recursive: true, force: true })
    for (let i = 0; i < 3; i++) await h.ok(version, {})
    expect(existsSync(logs)).toBe(false)
    mkdirSync(logs)
    await h.ok(version, {})
    expect(readFileSync(join(logs, "stoat.log"), "utf8").match(/op=host\.version /g)).toHaveLength(1)
  })

  it("skip a FIFO or a folder planted as stoat.log: the call answers, nothing blocks on it", async () => {
    const h = harness()
    mkdirSync(join(h.root, "logs"), { recursive: true })
    const log = join(h.root, "logs", "stoat.log")
    execFileSync("mkfifo", [log])
    for (let i = 0; i < 2; i++) await h.ok(version, {}, { caller: "mcp" })
    expect(statSync(log).isFIFO()).toBe(true)
    rmSync(log)
    mkdirSync(log)
    await h.ok(version, {})
    expect(statSync(log).isDirectory()).toBe(true)
  })
})
