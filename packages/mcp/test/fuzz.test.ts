import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ERROR_CODES } from "@stoat/wire"
import { buildRegistry } from "../src/index.js"
import { errorOf, inProcess } from "./helpers.js"

type Harness = Awaited<ReturnType<typeof inProcess>>
const tools = [...buildRegistry().values()].map((entry) => entry.definition)

/** Arguments shaped like the tool's schema (its own field names, any JSON values) plus stray keys. */
const argsFor = (schema: { properties?: Record<string, unknown> }) => {
  const names = Object.keys(schema.properties ?? {})
  const value = fc.oneof(
    fc.jsonValue(),
    fc.string(),
    fc.integer(),
    fc.constantFrom("vm-a", "tiny", "", "..", "/etc/passwd", "exec", -1, 1e309, null)
  )
  return fc
    .record(
      {
        known:
          names.length > 0
            ? fc.dictionary(fc.constantFrom(...names), value, { maxKeys: names.length })
            : fc.constant({}),
        stray: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 })
      },
      { requiredKeys: ["known"] }
    )
    .map(({ known, stray }) => ({ ...(stray ?? {}), ...known }))
}

describe("fuzzed arguments to every tool (fast-check)", () => {
  let h: Harness
  beforeAll(async () => {
    h = await inProcess()
    await h.client.callTool({ name: "create", arguments: { name: "vm-a", image: "tiny", agent_access: "exec" } })
  })
  afterAll(async () => h?.close())

  for (const tool of tools) {
    it(`${tool.name}: every answer is a success or an isError result with a wire error code, never internal`, async () => {
      await fc.assert(
        fc.asyncProperty(argsFor(tool.inputSchema as never), async (args) => {
          const result = await h.client.callTool({ name: tool.name, arguments: args as Record<string, unknown> })
          if (result.isError) {
            const info = errorOf(result)
            expect(ERROR_CODES).toContain(info.code)
            expect(info.code, `${tool.name}(${JSON.stringify(args)}): ${info.message}`).not.toBe("internal")
          } else expect(result.structuredContent).toBeTypeOf("object")
        }),
        { numRuns: 40 }
      )
    })
  }

  it("still answers after all of that", async () => {
    expect((await h.client.callTool({ name: "version", arguments: {} })).isError).toBeFalsy()
  })
})
