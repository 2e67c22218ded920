import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineOperation, READ } from "../../src/operations/operation.js"
import { harness } from "../vm/harness.js"

/** A host-level query whose handler returns whatever the test hands it, typed or not. */
const returning = (result: unknown) =>
  defineOperation({
    key: "test.echo",
    tool: "echo",
    expose: { cli: false, mcp: false },
    title: "Echo",
    description: "Returns a fixed result.",
    kind: "query",
    input: Schema.Struct({}),
    output: Schema.Struct({ name: Schema.String, count: Schema.optional(Schema.Number) }),
    annotations: READ,
    access: null,
    run: () => Effect.succeed(result as { name: string })
  })

describe("runOperation yields the output as its schema encodes it", () => {
  it("drops fields the output schema does not declare (nothing undeclared reaches a frontend)", async () => {
    const world = harness()
    expect(await world.ok(returning({ name: "web", count: 2, token: "s3cret" }), {})).toStrictEqual({ name: "web", count: 2 })
  })

  it("refuses a result of the wrong shape as internal, naming the tool", async () => {
    const world = harness()
    const error = await world.fail(returning({ name: 7 }), {})
    expect(error.code).toBe("internal")
    expect(error.message).toMatch(/^echo produced a result that does not match its schema: /)
  })
})
