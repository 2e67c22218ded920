import { Cause, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { ERROR_CODES } from "@stoat/wire"
import {
  CapabilityUnavailable,
  ERROR_CLASSES,
  isStoatError,
  LimitReached,
  NotFound,
  StoatErrorTypeId,
  toErrorInfo
} from "../src/errors.js"

describe("the code → class map", () => {
  it("has one class per wire code, each carrying its own code and brand", () => {
    expect(Object.keys(ERROR_CLASSES).sort()).toEqual([...ERROR_CODES].sort())
    for (const code of ERROR_CODES) {
      const Class = ERROR_CLASSES[code] as unknown as new (
        args: object
      ) => { code: string; _tag: string; message: string }
      const error = new Class({ message: `a ${code}`, subject: "x", reason: "r", needed_mb: 1, available_mb: 2 })
      expect(error.code).toBe(code)
      expect(error._tag).toBe(Class.name)
      expect(isStoatError(error)).toBe(true)
      expect(toErrorInfo(error)).toMatchObject({ code, message: `a ${code}`, subject: "x" })
    }
  })

  it("recognises Stoat errors by brand, not by a look-alike _tag and code", () => {
    const lookalike = { _tag: "NotFound", code: "not_found", message: "fake" }
    expect(isStoatError(lookalike)).toBe(false)
    expect(toErrorInfo(lookalike)).toEqual({ code: "internal", message: "[object Object]" })
    expect(isStoatError(new Error("plain"))).toBe(false)
    expect(isStoatError(null)).toBe(false)
  })

  it("carries reason and the memory figures, and finds the failure inside a Cause", () => {
    expect(toErrorInfo(new CapabilityUnavailable({ message: "m", reason: "not_implemented" }))).toEqual({
      code: "capability_unavailable",
      message: "m",
      reason: "not_implemented"
    })
    expect(toErrorInfo(new LimitReached({ message: "m", needed_mb: 512, available_mb: 100 }))).toEqual({
      code: "limit_reached",
      message: "m",
      needed_mb: 512,
      available_mb: 100
    })
    const exit = Effect.runSyncExit(new NotFound({ message: "no such VM", subject: "web" }))
    expect(Exit.isFailure(exit) && toErrorInfo(exit.cause)).toEqual({
      code: "not_found",
      message: "no such VM",
      subject: "web"
    })
    expect(toErrorInfo(Cause.die(new Error("boom")))).toEqual({ code: "internal", message: "boom" })
  })

  it("keeps the brand off the enumerable fields (on the prototype, not on each instance)", () => {
    const error = new NotFound({ message: "m", subject: "s" })
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({
      _tag: "NotFound",
      code: "not_found",
      message: "m",
      subject: "s"
    })
    expect(Object.getOwnPropertySymbols(error)).not.toContain(StoatErrorTypeId)
    expect(isStoatError(error)).toBe(true)
  })
})
