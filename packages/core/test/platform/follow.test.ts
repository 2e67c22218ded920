import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Chunk, Effect, Fiber, Stream } from "effect"
import { describe, expect, it, onTestFinished } from "vitest"
import { followFile } from "../../src/platform/follow.js"

const text = (chunks: Chunk.Chunk<Uint8Array>) =>
  Chunk.toReadonlyArray(chunks).map((bytes) => Buffer.from(bytes).toString("utf8"))

describe("followFile (stoat logs -f)", () => {
  it("yields what is appended after it starts, and a truncated file again from its top", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-follow-"))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "console.log")
    writeFileSync(file, "old line\n")
    const seen = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(followFile(file, "20 millis"), 2)))
        yield* Effect.sleep("60 millis")
        appendFileSync(file, "new line\n")
        yield* Effect.sleep("60 millis")
        truncateSync(file, 0)
        appendFileSync(file, "after rotation\n")
        return yield* Fiber.join(fiber).pipe(Effect.timeout("5 seconds"))
      })
    )
    expect(text(seen)).toEqual(["new line\n", "after rotation\n"])
  })

  it("waits for a file that does not exist yet", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-follow-"))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "later.log")
    const seen = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(followFile(file, "20 millis"), 1)))
        yield* Effect.sleep("60 millis")
        writeFileSync(file, "first\n")
        return yield* Fiber.join(fiber).pipe(Effect.timeout("5 seconds"))
      })
    )
    expect(text(seen)).toEqual(["first\n"])
  })

  it("follows a file that grows by gigabytes at once in bounded pieces, in order", async () => {
    const dir = mkdtempSync(join(tmpdir(), "stoat-follow-"))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, "console.log")
    writeFileSync(file, "")
    const seen = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(followFile(file, "10 millis", 4), 3)))
        yield* Effect.sleep("40 millis")
        appendFileSync(file, "abcdefghij")
        return yield* Fiber.join(fiber).pipe(Effect.timeout("5 seconds"))
      })
    )
    expect(text(seen)).toEqual(["abcd", "efgh", "ij"])
    // A sparse 8 GiB: more than one Buffer may hold; followed a MiB per look with no failure.
    const sparse = join(dir, "sparse.log")
    writeFileSync(sparse, "")
    const pieces = await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.fork(Stream.runCollect(Stream.take(followFile(sparse, "10 millis"), 2)))
        yield* Effect.sleep("40 millis")
        truncateSync(sparse, 8 * 1024 ** 3)
        return yield* Fiber.join(fiber).pipe(Effect.timeout("5 seconds"))
      })
    )
    expect(Chunk.toReadonlyArray(pieces).map((bytes) => bytes.length)).toEqual([1024 * 1024, 1024 * 1024])
  })
})
