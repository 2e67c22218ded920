import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Arbitrary, Cause, Effect, Either, Exit, FastCheck, Option, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { ERROR_CODES } from "@stoat/wire"
import { catalog, createVm, startVm } from "../../src/operations/index.js"
import type { Operation } from "../../src/operations/operation.js"
import { toErrorInfo } from "../../src/errors.js"
import { runOperation } from "../../src/operations/run.js"
import { FakeJobs } from "../../src/testing/index.js"
import { callerOf, harness, type Harness } from "../harness.js"

/** Operations that may legitimately block until their own timeout (waiting for a state). */
const MAY_BLOCK = new Set(["vm.wait", "vm.start"])
const CUTOFF_MS = 1500
/** Runs per operation; raise with STOAT_FUZZ_RUNS for a longer hunt. */
const RUNS = Number(process.env["STOAT_FUZZ_RUNS"] ?? 25)

const names = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("a", "b") },
  { weight: 2, arbitrary: fc.constantFrom("junk", "live") },
  { weight: 1, arbitrary: fc.constantFrom("nope", "tiny", "", "con", "../a", "shared") }
)
const value = fc.oneof(names, fc.jsonValue(), fc.string({ unit: "binary" }), fc.integer(), fc.boolean())

const fieldsOf = (operation: Operation): string[] => {
  const fields = (operation.input as unknown as { fields?: Record<string, unknown> }).fields
  return fields ? Object.keys(fields) : []
}

/**
 * Inputs the schema accepts, drawn from the schema itself (effect's Arbitrary, which runs on
 * effect's bundled fast-check: a seed from ours picks one sample), so runs reach the handlers.
 * VM-naming fields point at the world's VMs most of the time.
 */
const validFor = (operation: Operation) => {
  const schemaArbitrary = Arbitrary.make(operation.input as never) as FastCheck.Arbitrary<unknown>
  const ast = operation.input.ast as { propertySignatures?: ReadonlyArray<{ name: PropertyKey; isOptional: boolean }> }
  const optional = (ast.propertySignatures ?? [])
    .filter((signature) => signature.isOptional)
    .map((signature) => String(signature.name))
  return fc
    .tuple(fc.integer(), fc.nat(), names, fc.constantFrom("fresh", "fresh.2", "a", "con"))
    .map(([seed, keep, vm, name]) => {
      const sample = FastCheck.sample(schemaArbitrary, { seed, numRuns: 1 })[0]
      if (typeof sample !== "object" || sample === null) return sample
      const object = { ...(sample as Record<string, unknown>) }
      // Most optional fields dropped, so a run is not refused for its first odd field.
      optional.forEach((key, index) => {
        if ((keep >> index) % 4 !== 0) delete object[key]
      })
      for (const key of ["vm", "source"]) if (key in object && seed % 4 !== 0) object[key] = vm
      if ((operation.key === "vm.create" || operation.key === "vm.clone") && seed % 3 !== 0) object["name"] = name
      if (operation.key === "vm.create" && seed % 2 === 0) object["image"] = "tiny"
      return object
    })
}

/** Arbitrary JSON: fully random values, objects over the operation's own keys (plus, sometimes, a stranger), or schema-valid input. */
const inputFor = (operation: Operation) => {
  const keys = fieldsOf(operation)
  const known =
    keys.length === 0
      ? fc.constant({})
      : fc.record(Object.fromEntries(keys.map((key) => [key, value])) as Record<string, typeof value>, {
          requiredKeys: []
        })
  return fc.oneof(
    { weight: 1, arbitrary: fc.jsonValue() },
    { weight: 1, arbitrary: fc.dictionary(fc.string(), fc.jsonValue()) },
    { weight: 2, arbitrary: known },
    { weight: 6, arbitrary: validFor(operation) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(known, fc.string({ minLength: 1 }), fc.jsonValue())
        .map(([object, key, extra]) => ({ ...object, [key]: extra }))
    }
  )
}

/**
 * Host paths the fuzz draws (a screenshot's `path`, a copy's `local`) land in a scratch folder:
 * drawn as given, a run wrote PNGs into the package folder, and one starting with "/" could
 * write anywhere on the host.
 */
const scratch = mkdtempSync(join(tmpdir(), "stoat-fuzz-"))
const HOST_PATH_FIELDS = ["path", "local"]
const confined = (input: unknown): unknown => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return input
  const object = { ...(input as Record<string, unknown>) }
  for (const key of HOST_PATH_FIELDS) {
    const value = object[key]
    if (typeof value === "string") object[key] = join(scratch, value.replace(/[/\\]/g, "_").replace(/^\.+/, "_") || "_")
  }
  return object
}

/** A data root with a stopped VM, a running one, a broken one and a live one. */
const world = async (): Promise<Harness> => {
  const h = harness()
  // The guest answers the background-job scripts, so exec_bg and job_* reach their handlers.
  new FakeJobs().install(h.guest)
  await h.ok(createVm, { name: "a", image: "tiny" })
  await h.ok(createVm, { name: "b", image: "tiny" })
  await h.ok(startVm, { vm: "b" })
  h.writeVmToml("junk", "sshport = 2399\n[[[\n")
  h.writeVmToml("live", 'mode = "live"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nsshport = 2398\n')
  return h
}

const vmTomls = (h: Harness) =>
  Object.fromEntries(
    h.vmFolders().map((name) => [
      name,
      (() => {
        try {
          return readFileSync(join(h.root, name, "vm.toml"), "utf8")
        } catch {
          return undefined
        }
      })()
    ])
  )

describe("fuzz: arbitrary JSON input never defects", () => {
  for (const operation of catalog) {
    it(`${operation.key} (${operation.tool})`, { timeout: 120_000 }, async () => {
      const h = await world()
      const outcomes: Record<string, number> = {}
      await fc.assert(
        fc.asyncProperty(
          inputFor(operation).map(confined),
          fc.constantFrom("cli", "mcp") as fc.Arbitrary<"cli" | "mcp">,
          async (input, caller) => {
            const folders = h.vmFolders()
            const tomls = vmTomls(h)
            const effect = Effect.provide(
              Effect.provide(runOperation(operation, input, { requestId: "fuzz" }), callerOf(caller)),
              h.layer() as never
            ) as Effect.Effect<unknown, unknown>
            const outcome = await Effect.runPromise(Effect.timeoutOption(Effect.exit(effect), CUTOFF_MS))
            if (Option.isNone(outcome)) {
              // Only waiting operations may still be waiting (for a state the fuzz input asked for).
              expect(MAY_BLOCK.has(operation.key), `${operation.key} ${JSON.stringify(input)} hung`).toBe(true)
              return
            }
            const exit = outcome.value
            outcomes[Exit.isSuccess(exit) ? "ok" : toErrorInfo(exit.cause).code] =
              (outcomes[Exit.isSuccess(exit) ? "ok" : toErrorInfo(exit.cause).code] ?? 0) + 1
            if (Exit.isSuccess(exit)) {
              // What the frontends send: the output encoded by the operation's own schema, no stray keys.
              const encoded = Schema.encodeUnknownEither(operation.output, { onExcessProperty: "error" })(exit.value)
              expect(
                Either.isRight(encoded),
                `${operation.key} ${JSON.stringify(input)} returned ${JSON.stringify(exit.value)} outside its output schema`
              ).toBe(true)
              return
            }
            const failure = Cause.failureOption(exit.cause)
            expect(
              Option.isSome(failure),
              `${operation.key} ${JSON.stringify(input)} died: ${Cause.pretty(exit.cause)}`
            ).toBe(true)
            const info = toErrorInfo(exit.cause)
            expect(ERROR_CODES as ReadonlyArray<string>).toContain(info.code)
            expect(info.code, `${operation.key} ${JSON.stringify(input)}: ${info.message}`).not.toBe("internal")
            expect(typeof info.message).toBe("string")
            // A rejected input leaves no new VM folder; input refused by the schema changes nothing.
            expect(
              h.vmFolders().filter((name) => !folders.includes(name)),
              `${operation.key} ${JSON.stringify(input)}`
            ).toEqual([])
            if (info.code === "usage") expect(vmTomls(h)).toEqual(tomls)
          }
        ),
        { numRuns: RUNS }
      )
      // STOAT_FUZZ_DEBUG=1 prints how deep the runs got (which codes came back).
      if (process.env["STOAT_FUZZ_DEBUG"]) console.log(operation.key, outcomes)
    })
  }
})
