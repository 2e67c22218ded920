/** The KVM probe's machine code is its assembly source, assembled: the two cannot drift apart. */
import { execFileSync } from "node:child_process"
import { mkdtemp, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { LONG_MODE_PAYLOAD_HEX } from "../src/accel.js"

const has = (tool: string) => {
  try {
    execFileSync(tool, ["--version"], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}
const binutils = has("as") && has("objcopy")
if (!binutils)
  console.warn(
    "*** accel-payload: SKIPPED, GNU as and objcopy are needed to assemble src/accel-payload.S (apt-get install binutils) ***"
  )

describe("the KVM probe's long-mode payload", () => {
  it.skipIf(!binutils)("is src/accel-payload.S assembled", async () => {
    const dir = await mkdtemp(join(tmpdir(), "stoat-payload-"))
    try {
      execFileSync("as", ["--64", "-o", join(dir, "payload.o"), join(import.meta.dirname, "../src/accel-payload.S")])
      execFileSync("objcopy", ["-O", "binary", "-j", ".text", join(dir, "payload.o"), join(dir, "payload.bin")])
      expect((await readFile(join(dir, "payload.bin"))).toString("hex")).toBe(LONG_MODE_PAYLOAD_HEX)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
