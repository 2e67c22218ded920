import { execFileSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, TestClock, TestContext } from "effect"
import { describe, expect, it } from "vitest"
import { makeAuditLog, type AuditEntry } from "../../src/context/audit-log.js"

const entry = (operation: string): AuditEntry => ({ operation, tool: "t", entrypoint: "mcp", requestId: "r1", ms: 3, outcome: "ok" })

/** Runs `body` with an audit log at `path`, under the test clock (so "a second later" is exact). */
const withLog = (path: string, body: (record: (operation: string) => Effect.Effect<void>) => Effect.Effect<void>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(makeAuditLog(path), (log) => body((operation) => log.record(entry(operation))))).pipe(Effect.provide(TestContext.TestContext))
  )

const logsDir = () => {
  const dir = join(mkdtempSync(join(tmpdir(), "stoat-audit-")), "logs")
  mkdirSync(dir)
  return dir
}

describe("stoat.log", () => {
  it("gets one line per call, in order, without the arguments", async () => {
    const path = join(logsDir(), "stoat.log")
    await withLog(path, (record) => Effect.all([record("vm.list"), record("vm.get")], { discard: true }))
    const lines = readFileSync(path, "utf8").split("\n").filter(Boolean)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/ INFO op=vm.list tool=t entrypoint=mcp request=r1 ms=3 outcome=ok$/)
    expect(lines[1]).toContain("op=vm.get")
  })

  it("a root without logs/ gets no folder, and lines start once logs/ exists", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "stoat-audit-")), "logs")
    const path = join(dir, "stoat.log")
    await withLog(path, (record) =>
      Effect.gen(function* () {
        yield* record("before")
        expect(() => readFileSync(path)).toThrow()
        mkdirSync(dir)
        yield* record("after")
      })
    )
    expect(readFileSync(path, "utf8")).toMatch(/op=after/)
    expect(readFileSync(path, "utf8")).not.toMatch(/op=before/)
  })

  it("a log deleted while held is made anew within a second", async () => {
    const path = join(logsDir(), "stoat.log")
    await withLog(path, (record) =>
      Effect.gen(function* () {
        yield* record("first")
        rmSync(path)
        yield* TestClock.adjust("2 seconds")
        yield* record("second")
      })
    )
    expect(readFileSync(path, "utf8")).toMatch(/^\S+ INFO op=second /)
  })

  it("a FIFO planted as stoat.log is never written and never blocks the call", async () => {
    const path = join(logsDir(), "stoat.log")
    execFileSync("mkfifo", [path])
    await withLog(path, (record) => Effect.all([record("one"), record("two")], { discard: true }))
  })

  it("a directory as stoat.log is skipped", async () => {
    const path = join(logsDir(), "stoat.log")
    mkdirSync(path)
    await withLog(path, (record) => record("one"))
  })
})
