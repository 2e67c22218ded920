import { Effect, Schema, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import { defineOperation, READ } from "../../src/operations/operation.js"
import { listVms } from "../../src/operations/index.js"
import { runOperation } from "../../src/operations/run.js"
import { callerOf, harness } from "../vm/harness.js"

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

describe("runOperation's span", () => {
  /** A tracer that keeps every span it is asked for, with its attributes and whether it ended. */
  const recordingTracer = () => {
    const spans: Array<{ name: string; attributes: Map<string, unknown>; ended: boolean }> = []
    const tracer = Tracer.make({
      span: (name, parent, context, links, startTime, kind) => {
        const record = { name, attributes: new Map<string, unknown>(), ended: false }
        spans.push(record)
        const span: Tracer.Span = {
          _tag: "Span",
          name,
          spanId: `span-${spans.length}`,
          traceId: "trace",
          parent,
          context,
          status: { _tag: "Started", startTime },
          attributes: record.attributes,
          links,
          sampled: true,
          kind,
          end: () => {
            record.ended = true
          },
          attribute: (key, value) => {
            record.attributes.set(key, value)
          },
          event: () => undefined,
          addLinks: () => undefined
        }
        return span
      },
      context: (f) => f()
    })
    return { tracer, spans }
  }

  it("a provided tracer sees each call as a span named by the operation's key, with tool, request and entrypoint", async () => {
    const world = harness()
    const { tracer, spans } = recordingTracer()
    const program = Effect.provide(runOperation(listVms, {}, { requestId: "r-1" }), callerOf("mcp"))
    await Effect.runPromise(Effect.provide(program, world.layer() as never).pipe(Effect.withTracer(tracer)) as Effect.Effect<unknown>)
    const call = spans.find((span) => span.name === "vm.list")
    expect(call?.ended).toBe(true)
    expect(Object.fromEntries(call?.attributes ?? [])).toEqual({ tool: "list_vms", request: "r-1", entrypoint: "mcp" })
  })

  it("without a tracer a call still runs and answers (spans are made only for one)", async () => {
    const world = harness()
    expect(await world.ok(listVms, {}, { caller: "mcp" })).toEqual({ vms: [] })
  })
})
