import { mkdtempSync, realpathSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Effect, Exit } from "effect"
import fc from "fast-check"
import { stringify } from "smol-toml"
import { afterAll, describe, expect, it } from "vitest"
import { isStoatError } from "../../src/errors.js"
import { decodeProject } from "../../src/projects/file.js"

const dir = realpathSync(mkdtempSync(join(tmpdir(), "stoat-project-fuzz-")))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Decoding either succeeds or fails with one of Stoat's typed errors: never a defect. */
const decodesOrFailsTyped = async (text: string) => {
  const exit = await Effect.runPromiseExit(decodeProject(dir, text))
  if (Exit.isSuccess(exit)) return
  const failure = Cause.failureOption(exit.cause)
  expect(failure._tag, Cause.pretty(exit.cause)).toBe("Some")
  expect(isStoatError(failure._tag === "Some" ? failure.value : undefined)).toBe(true)
}

const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.double({ noNaN: true }),
  fc.array(fc.string(), { maxLength: 3 })
)
const vm = fc.dictionary(
  fc.constantFrom(
    "image",
    "name",
    "cpus",
    "ram",
    "disk",
    "recipes",
    "shares",
    "agent_access",
    "provider",
    "params",
    "extra"
  ),
  value
)

describe("stoat.toml decoding under fuzzed input", () => {
  it("never dies on arbitrary text", async () => {
    await fc.assert(fc.asyncProperty(fc.string({ maxLength: 400 }), decodesOrFailsTyped), { numRuns: 300 })
  })

  it("never dies on well-formed TOML with arbitrary keys and values", async () => {
    const file = fc.record(
      {
        schema: fc.oneof(fc.constantFrom(1, 2, 3), value),
        project: fc.record({ name: fc.string() }),
        limits: fc.dictionary(fc.constantFrom("max_vms", "max_ram_mb", "other"), value),
        vms: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), vm, { maxKeys: 3 })
      },
      { requiredKeys: [] }
    )
    await fc.assert(
      fc.asyncProperty(file, (toml) => decodesOrFailsTyped(stringify(toml))),
      { numRuns: 300 }
    )
  })
})
