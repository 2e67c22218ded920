import { Arbitrary, FastCheck, Schema } from "effect"
import { describe, expect, it } from "vitest"
import * as wire from "../src/index.js"

/** Every exported schema of the contract, found by shape so a new DTO is covered without editing this list. */
const schemas = Object.entries(wire).filter(([, value]) => Schema.isSchema(value)) as Array<
  [string, Schema.Schema<unknown, unknown, never>]
>

/** A `__proto__` own key cannot survive any plain-object round trip; generated values with one are not DTOs. */
const hasProtoKey = (value: unknown): boolean =>
  typeof value === "object" &&
  value !== null &&
  (Object.hasOwn(value, "__proto__") || Object.values(value).some(hasProtoKey))

describe("wire DTOs", () => {
  it("exports the DTOs the contract names", () => {
    const names = schemas.map(([name]) => name)
    for (const dto of [
      "Vm",
      "VmStatus",
      "Image",
      "Snapshot",
      "HostCheck",
      "DoctorReport",
      "RecipeSchema",
      "RecipeEntry",
      "Guest",
      "ExecResult",
      "ProjectStatus",
      "ProjectRun",
      "McpDoctor",
      "CapabilityReport",
      "ErrorInfo",
      "Envelope"
    ]) {
      expect(names).toContain(dto)
    }
  })

  it.each(schemas)("%s survives encode → JSON → decode", (_name, schema) => {
    const decode = Schema.decodeUnknownSync(schema)
    const encode = Schema.encodeSync(schema)
    FastCheck.assert(
      FastCheck.property(Arbitrary.make(schema), (value) => {
        FastCheck.pre(!hasProtoKey(value))
        const wireText = JSON.stringify(encode(value))
        expect(decode(JSON.parse(wireText))).toEqual(value)
      }),
      { numRuns: 30 }
    )
  })

  it("keeps lists as arrays, never null", () => {
    expect(() => Schema.decodeUnknownSync(wire.VmList)({ vms: null })).toThrow()
  })
})

describe("envelope", () => {
  it("never HTML-escapes", () => {
    const line = wire.encodeLine(wire.resultOk("ls", { s: "<a & b>\u2028" }))
    expect(line).toContain("<a & b>\u2028")
    expect(line.endsWith("\n")).toBe(true)
    expect(line.slice(0, -1)).not.toContain("\n")
  })

  it("has exactly the contract fields", () => {
    expect(wire.resultError("get", { code: "not_found", message: "no VM" })).toEqual({
      v: 3,
      type: "result",
      cmd: "get",
      ok: false,
      error: { code: "not_found", message: "no VM" }
    })
    expect(wire.CONTRACT_VERSION).toBe(3)
  })

  it("lists limit_reached and the error meta key", () => {
    expect(wire.ERROR_CODES).toContain("limit_reached")
    expect(wire.ERROR_META_KEY).toBe("io.github.novusedge.stoat/error")
    const info = Schema.decodeUnknownSync(wire.ErrorInfo)({
      code: "limit_reached",
      message: "m",
      needed_mb: 4096,
      available_mb: 100
    })
    expect(info.needed_mb).toBe(4096)
  })
})
