import { writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Schema, Tracer } from "effect"
import { describe, expect, it } from "vitest"
import { defineOperation, READ } from "../../src/operations/operation.js"
import { createVm, execInGuest, listVms, startVm } from "../../src/operations/index.js"
import { runOperation } from "../../src/operations/run.js"
import { GuestDefinitions } from "../../src/guest-definitions/definitions.js"
import { VmStore } from "../../src/vm/store.js"
import { callerOf, harness, type CallerKind } from "../harness.js"

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
    expect(await world.ok(returning({ name: "web", count: 2, token: "s3cret" }), {})).toStrictEqual({
      name: "web",
      count: 2
    })
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
    await Effect.runPromise(
      Effect.provide(program, world.layer() as never).pipe(Effect.withTracer(tracer)) as Effect.Effect<unknown>
    )
    const call = spans.find((span) => span.name === "vm.list")
    expect(call?.ended).toBe(true)
    expect(Object.fromEntries(call?.attributes ?? [])).toEqual({ tool: "list_vms", request: "r-1", entrypoint: "mcp" })
  })

  it("without a tracer a call still runs and answers (spans are made only for one)", async () => {
    const world = harness()
    expect(await world.ok(listVms, {}, { caller: "mcp" })).toEqual({ vms: [] })
  })
})

describe("input errors an agent can act on (issue 26 item 9)", () => {
  /** The message the catalog's own schema gives this input of this tool. */
  const messageOf = async (tool: string, input: unknown) => {
    const { catalog } = await import("../../src/operations/index.js")
    const error = await harness().fail(catalog.find((operation) => operation.tool === tool)!, input)
    expect(error.code).toBe("usage")
    return error.message
  }

  it("says what an argument takes in words, never the schema's construction", async () => {
    expect(await messageOf("exec", { vm: "a", argv: "ls -l" })).toBe(
      'invalid input for exec: argv must be a non-empty array of strings, got "ls -l"'
    )
    expect(await messageOf("exec", { vm: "a", argv: [] })).toBe("invalid input for exec: argv must not be empty")
    expect(await messageOf("exec", { vm: "a", argv: [1] })).toBe(
      "invalid input for exec: argv.0 must be a string, got 1"
    )
    expect(await messageOf("exec", { vm: "a", argv: ["true"], timeout_seconds: "10s" })).toBe(
      'invalid input for exec: timeout_seconds must be a number, got "10s"'
    )
    expect(await messageOf("update", { vm: "a", params: { web: { port: 80 } } })).toBe(
      "invalid input for update: params.web.port must be a string, got 80"
    )
  })

  it("gives one message for a value outside a fixed set, naming the set", async () => {
    expect(await messageOf("wait", { vm: "a", until: "up" })).toBe(
      'invalid input for wait: until must be one of "reachable", "applied", "stopped", got "up"'
    )
    expect(await messageOf("svc", { vm: "a", name: "nginx", action: "boot" })).toBe(
      'invalid input for svc: action must be one of "enable", "start", "stop", "restart", got "boot"'
    )
    expect(await messageOf("wait", { vm: "a", healthy: "yes" })).toBe(
      'invalid input for wait: healthy must be true or false, got "yes"'
    )
  })

  it("keeps a schema's own rule message and names a long value by its length, never echoing it", async () => {
    expect(await messageOf("forward", { vm: "a", pairs: ["80"] })).toBe(
      "invalid input for forward: pairs.0: forwards are HOST:GUEST port pairs such as 8080:80"
    )
    const message = await messageOf("exec", { vm: "a", argv: ["x".repeat(200_000)] })
    expect(message).toMatch(
      /^invalid input for exec: argv\.0 must be a string at most 131072 character\(s\) long, got a value of 200002 characters$/
    )
    expect(message.length).toBeLessThan(200)
  })
})

describe("runOperation checks guest access for every caller", () => {
  it("refuses an MCP caller below the VM's agent_access before the handler, and lets the CLI through", async () => {
    const world = harness()
    await world.ok(createVm, { name: "web", image: "tiny", agent_access: "observe" })
    await world.ok(startVm, { vm: "web" })
    expect(await world.fail(execInGuest, { vm: "web", argv: ["true"] }, { caller: "mcp" })).toEqual({
      code: "access_denied",
      message: 'vm "web" has agent_access = observe; needs exec',
      subject: "web"
    })
    expect(world.guest.execs).toEqual([])
    expect(await world.ok(execInGuest, { vm: "web", argv: ["true"] })).toMatchObject({ exit_code: 0 })
  })

  it("a broken vm.toml fails the check with its error, never open", async () => {
    const world = harness()
    await world.ok(createVm, { name: "web", image: "tiny", agent_access: "exec" })
    writeFileSync(join(world.root, "web", "vm.toml"), "not toml [")
    expect((await world.fail(execInGuest, { vm: "web", argv: ["true"] }, { caller: "mcp" })).code).toBe("broken")
  })
})

describe("runOperation loads each target VM once per call", () => {
  /** Runs exec on "web" as `caller`, counting reads of vm.toml (VmStore.get) and of the guest definitions. */
  const countedExec = async (caller: CallerKind) => {
    const world = harness()
    await world.ok(createVm, { name: "web", image: "tiny", agent_access: "exec" })
    await world.ok(startVm, { vm: "web" })
    const reads = { vmToml: 0, guests: 0 }
    const counting =
      (key: keyof typeof reads) =>
      <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        Effect.zipRight(
          Effect.sync(() => reads[key]++),
          effect
        )
    const program = runOperation(execInGuest, { vm: "web", argv: ["true"] }, { requestId: "test" }).pipe(
      Effect.updateService(VmStore, (store) => ({
        ...store,
        get: (name: string) => counting("vmToml")(store.get(name))
      })),
      Effect.updateService(GuestDefinitions, (guests) => ({
        list: counting("guests")(guests.list),
        get: (name: string) => counting("guests")(guests.get(name))
      })),
      Effect.provide(callerOf(caller))
    )
    const result = await Effect.runPromise(Effect.provide(program, world.layer() as never) as Effect.Effect<unknown>)
    expect(result).toMatchObject({ exit_code: 0 })
    return reads
  }

  it("an MCP exec reads vm.toml once and the guest definitions once: the access check's load is the handler's", async () => {
    expect(await countedExec("mcp")).toEqual({ vmToml: 1, guests: 1 })
  })

  it("a CLI exec, with no access check, reads them once too", async () => {
    expect(await countedExec("cli")).toEqual({ vmToml: 1, guests: 1 })
  })
})
