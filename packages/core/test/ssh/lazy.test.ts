import { Effect } from "effect"
import { describe, expect, it, vi } from "vitest"

/** Stands in for the ssh2 transport module: records that it was loaded and which VMs were released. */
const loaded = vi.hoisted(() => ({ count: 0, released: [] as string[] }))
vi.mock("../../src/ssh/live.js", async () => {
  loaded.count++
  const { Effect } = await import("effect")
  const unused = () => Effect.die("not used in this test")
  return {
    makeGuestTransport: () =>
      Effect.succeed({
        exec: unused,
        readFile: unused,
        writeFile: unused,
        upload: unused,
        download: unused,
        probe: unused,
        release: (vm: string) => Effect.sync(() => void loaded.released.push(vm))
      })
  }
})

const { GuestTransport } = await import("../../src/ports/guest-transport.js")
const { LazyGuestTransportLive } = await import("../../src/ssh/lazy.js")

describe("the lazy guest transport", () => {
  it("loads the ssh2 transport on the first guest call only; releasing before that loads nothing", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const transport = yield* GuestTransport
          yield* transport.release("idle")
          expect(loaded.count).toBe(0)
          yield* Effect.exit(
            transport.exec({ vm: "web", port: 2222, user: "root", privateKeyPath: "/nonexistent" }, ["true"])
          )
          expect(loaded.count).toBe(1)
          yield* transport.release("web")
          expect(loaded.released).toEqual(["web"])
        }).pipe(Effect.provide(LazyGuestTransportLive))
      )
    )
  })
})
