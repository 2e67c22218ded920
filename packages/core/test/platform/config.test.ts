import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { DataRoot, DataRootLive } from "../../src/platform/data-root.js"
import { HostProbe, HostProbeLive } from "../../src/platform/host.js"

const withEnv = (env: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
const rootOf = (env: Record<string, string>) =>
  Effect.map(DataRoot, (root) => root.root).pipe(Effect.provide(DataRootLive), withEnv(env))

describe("settings through Config", () => {
  it.effect("the data root is STOAT_HOME, or ~/.stoat when it is unset or empty", () =>
    Effect.gen(function* () {
      expect(yield* rootOf({ STOAT_HOME: "/tmp/somewhere/../stoat-home" })).toBe("/tmp/stoat-home")
      expect(yield* rootOf({})).toBe(join(homedir(), ".stoat"))
      expect(yield* rootOf({ STOAT_HOME: "" })).toBe(join(homedir(), ".stoat"))
    })
  )

  it.effect("a STOAT_HOME that names a file fails invalid_spec naming it", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "stoat-config-"))
      const file = join(dir, "not-a-dir")
      writeFileSync(file, "x")
      const error = yield* Effect.flip(rootOf({ STOAT_HOME: file }))
      rmSync(dir, { recursive: true, force: true })
      expect(error).toMatchObject({ code: "invalid_spec", subject: file })
    })
  )

  it.effect("graphical follows STOAT_GRAPHICAL, else DISPLAY or WAYLAND_DISPLAY", () =>
    Effect.gen(function* () {
      const graphical = (env: Record<string, string>) =>
        Effect.flatMap(HostProbe, (host) => host.graphical).pipe(Effect.provide(HostProbeLive), withEnv(env))
      expect(yield* graphical({})).toBe(false)
      expect(yield* graphical({ DISPLAY: ":0" })).toBe(true)
      expect(yield* graphical({ WAYLAND_DISPLAY: "wayland-0" })).toBe(true)
      expect(yield* graphical({ DISPLAY: ":0", STOAT_GRAPHICAL: "0" })).toBe(false)
      expect(yield* graphical({ STOAT_GRAPHICAL: "1" })).toBe(true)
    })
  )

  it.effect("programs are looked up on the PATH the config provides", () =>
    Effect.gen(function* () {
      const which = (env: Record<string, string>) =>
        Effect.flatMap(HostProbe, (host) => host.which("sh")).pipe(Effect.provide(HostProbeLive), withEnv(env))
      expect(yield* which({ PATH: "/bin:/usr/bin" })).toMatch(/\/sh$/)
      expect(yield* which({ PATH: "/nonexistent" })).toBeUndefined()
    })
  )
})
