import { describe, expect, it } from "vitest"
import { humanSize, progressBar } from "../src/render.js"

describe("progressBar", () => {
  it("draws the share done, the percent and both sizes", () => {
    expect(progressBar(0, 344 * 1024 * 1024, 0, 10)).toBe("[----------]   0%  0 / 344M")
    expect(progressBar(150 * 1024 * 1024, 344 * 1024 * 1024, 43, 10)).toBe("[####------]  43%  150M / 344M")
    expect(progressBar(344 * 1024 * 1024, 344 * 1024 * 1024, 100, 10)).toBe("[##########] 100%  344M / 344M")
  })

  it("sizes read as a person writes them", () => {
    expect([humanSize(512), humanSize(1536), humanSize(12 * 1024 * 1024), humanSize(3 * 1024 ** 3)]).toEqual([
      "512",
      "1.5K",
      "12M",
      "3.0G"
    ])
  })
})
