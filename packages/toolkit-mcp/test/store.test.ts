import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option } from "effect"
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ConfigDb, ConfigStore, OAuthProfiles, Profiles, ToolStoreLive, configDbPath } from "../src/store/index.js"

const tempDb = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "stoat-profiles-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => join(dir, "toolkit", "config.db")))

/** Runs `body` against a fresh store in a temp directory; each call gets its own scoped handle. */
const withStore = <A, E>(
  body: (
    path: string,
    run: <B, F>(effect: Effect.Effect<B, F, Profiles | ConfigStore | OAuthProfiles | ConfigDb>) => Effect.Effect<B, F>
  ) => Effect.Effect<A, E>
) => Effect.flatMap(tempDb, (path) => body(path, (effect) => Effect.provide(effect, ToolStoreLive(path))))

describe("configDbPath", () => {
  it("prefers an absolute XDG_CONFIG_HOME and falls back to ~/.config", () => {
    expect(configDbPath("toolkit", { XDG_CONFIG_HOME: "/x/cfg" }, "/home/u")).toBe("/x/cfg/toolkit/config.db")
    expect(configDbPath("toolkit", {}, "/home/u")).toBe("/home/u/.config/toolkit/config.db")
    expect(configDbPath("toolkit", { XDG_CONFIG_HOME: "relative" }, "/home/u")).toBe(
      "/home/u/.config/toolkit/config.db"
    )
  })
})

describe("Profiles (mcp_profiles)", () => {
  it.scoped("reads nothing and creates no file when the database is missing", () =>
    withStore((path, run) =>
      Effect.gen(function* () {
        const profiles = yield* run(Effect.flatMap(Profiles, (p) => p.list))
        expect(profiles).toEqual([])
        expect(yield* run(Effect.flatMap(Profiles, (p) => p.remove("x")))).toBe(false)
        expect(existsSync(path)).toBe(false)
      })
    )
  )

  it.scoped("saves, overwrites without merging, lists in name order and deletes", () =>
    withStore((path, run) =>
      Effect.gen(function* () {
        const replaced1 = yield* run(
          Effect.flatMap(Profiles, (p) =>
            p.save({ name: "text-tools", include: ["strings", "interpreters/brainfuck"], port: 5200 })
          )
        )
        const replaced2 = yield* run(
          Effect.flatMap(Profiles, (p) => p.save({ name: "a-first", include: ["interpreters"], host: "127.0.0.2" }))
        )
        expect([replaced1, replaced2]).toEqual([false, false])
        const replaced3 = yield* run(
          Effect.flatMap(Profiles, (p) => p.save({ name: "text-tools", include: ["strings/reverse"] }))
        )
        expect(replaced3).toBe(true)
        const list = yield* run(Effect.flatMap(Profiles, (p) => p.list))
        expect(list).toEqual([
          { name: "a-first", include: ["interpreters"], host: "127.0.0.2" },
          { name: "text-tools", include: ["strings/reverse"] }
        ])
        expect(yield* run(Effect.flatMap(Profiles, (p) => p.get("text-tools")))).toEqual(
          Option.some({ name: "text-tools", include: ["strings/reverse"] })
        )
        expect(yield* run(Effect.flatMap(Profiles, (p) => p.remove("text-tools")))).toBe(true)
        expect(yield* run(Effect.flatMap(Profiles, (p) => p.remove("text-tools")))).toBe(false)
        expect(Option.isNone(yield* run(Effect.flatMap(Profiles, (p) => p.get("text-tools"))))).toBe(true)
        // The file holds OAuth secrets too, so it is private to the user.
        expect(statSync(path).mode & 0o777).toBe(0o600)
      })
    )
  )

  it.scoped("rejects names outside ^[a-z0-9-]+$, empty includes and bad ports without writing", () =>
    withStore((path, run) =>
      Effect.gen(function* () {
        for (const bad of [
          { name: "Text", include: ["strings"] },
          { name: "a_b", include: ["strings"] },
          { name: "", include: ["strings"] },
          { name: "ok", include: [] },
          { name: "ok", include: ["strings"], port: 70_000 }
        ]) {
          const outcome = yield* run(Effect.either(Effect.flatMap(Profiles, (p) => p.save(bad))))
          expect(Either.isLeft(outcome) && outcome.left._tag).toBe("InvalidSpec")
        }
        expect(existsSync(path)).toBe(false)
      })
    )
  )

  it.scoped("reports a corrupt database as broken with its path", () =>
    withStore((path, run) =>
      Effect.gen(function* () {
        yield* run(Effect.flatMap(Profiles, (p) => p.save({ name: "x", include: ["strings"] })))
        writeFileSync(path, "this is not sqlite, just text that is long enough to look like a header...........")
        const outcome = yield* run(Effect.either(Effect.flatMap(Profiles, (p) => p.list)))
        expect(Either.isLeft(outcome) && outcome.left.message).toContain(`config database ${path} is unreadable:`)
      })
    )
  )
})

describe("ConfigStore (one table per topic)", () => {
  it.scoped("sets, lists and unsets rows as JSON token arrays", () =>
    withStore((_path, run) =>
      Effect.gen(function* () {
        yield* run(
          Effect.flatMap(ConfigStore, (c) =>
            c.apply(
              "strings",
              [
                { action: "", option: "words-per-minute", tokens: ["180"] },
                { action: "report", option: "words-per-minute", tokens: ["120"] }
              ],
              []
            )
          )
        )
        const rows = yield* run(Effect.flatMap(ConfigStore, (c) => c.entries("strings")))
        expect(rows).toEqual([
          { action: "", option: "words-per-minute", tokens: ["180"] },
          { action: "report", option: "words-per-minute", tokens: ["120"] }
        ])
        const removed = yield* run(
          Effect.flatMap(ConfigStore, (c) =>
            c.apply(
              "strings",
              [],
              [
                { action: "", option: "words-per-minute" },
                { action: "", option: "nope" }
              ]
            )
          )
        )
        expect(removed).toEqual([true, false])
        const raw = yield* run(
          Effect.flatMap(ConfigDb, (db) =>
            db.read((d) => d.prepare(`SELECT value FROM "strings"`).all(), [] as unknown[])
          )
        )
        expect(raw).toEqual([{ value: '["120"]' }])
        expect(yield* run(Effect.flatMap(ConfigStore, (c) => c.entries("oauth")))).toEqual([])
      })
    )
  )

  it.scoped("refuses topic names that are not table-safe", () =>
    withStore((_path, run) =>
      Effect.gen(function* () {
        const outcome = yield* run(Effect.either(Effect.flatMap(ConfigStore, (c) => c.entries("mcp_profiles"))))
        expect(Either.isLeft(outcome)).toBe(true)
      })
    )
  )
})

describe("OAuthProfiles", () => {
  it.scoped("keeps the secret out of list and matches names without case", () =>
    withStore((_path, run) =>
      Effect.gen(function* () {
        yield* run(
          Effect.flatMap(OAuthProfiles, (o) =>
            o.add({
              name: "Acme",
              tokenUrl: "http://127.0.0.1:1/token",
              clientId: "cid",
              clientSecret: "s3cret",
              scope: "read"
            })
          )
        )
        const dup = yield* run(
          Effect.either(
            Effect.flatMap(OAuthProfiles, (o) =>
              o.add({ name: "acme", tokenUrl: "http://x/token", clientId: "c", clientSecret: "s" })
            )
          )
        )
        expect(Either.isLeft(dup) && dup.left._tag).toBe("NameTaken")
        const list = yield* run(Effect.flatMap(OAuthProfiles, (o) => o.list))
        expect(list).toEqual([
          { name: "Acme", tokenUrl: "http://127.0.0.1:1/token", clientId: "cid", scope: "read", hasSecret: true }
        ])
        expect(JSON.stringify(list)).not.toContain("s3cret")
        yield* run(Effect.flatMap(OAuthProfiles, (o) => o.update("ACME", { clientSecret: "n3w" })))
        expect((yield* run(Effect.flatMap(OAuthProfiles, (o) => o.secret("acme")))).clientSecret).toBe("n3w")
        const badUrl = yield* run(
          Effect.either(Effect.flatMap(OAuthProfiles, (o) => o.update("acme", { tokenUrl: "ftp://x" })))
        )
        expect(Either.isLeft(badUrl) && badUrl.left._tag).toBe("InvalidSpec")
        yield* run(Effect.flatMap(OAuthProfiles, (o) => o.remove("acme")))
        const gone = yield* run(Effect.either(Effect.flatMap(OAuthProfiles, (o) => o.remove("acme"))))
        expect(Either.isLeft(gone) && gone.left._tag).toBe("NotFound")
      })
    )
  )
})
