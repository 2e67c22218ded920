import { describe, expect, it } from "vitest"
import { parseDurationMs } from "../../src/platform/duration.js"

describe("parseDurationMs", () => {
  it("reads Go-style durations, one unit or several in order", () => {
    expect(parseDurationMs("500ms")).toBe(500)
    expect(parseDurationMs("30s")).toBe(30_000)
    expect(parseDurationMs("2m")).toBe(120_000)
    expect(parseDurationMs("1m30s")).toBe(90_000)
    expect(parseDurationMs("1h")).toBe(3_600_000)
  })

  it("refuses anything else", () => {
    for (const text of ["", "90", "1.5s", "s", "2x", "30s1m", "-1s", " 1s"])
      expect(parseDurationMs(text), text).toBeUndefined()
  })
})
