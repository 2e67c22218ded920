import { Effect, Layer, Scope } from "effect"
import { GuestTransport } from "../ports/guest-transport.js"
import { makeSshProbe } from "./probe.js"

/**
 * The live ssh2 transport, loaded on the first guest call: commands that never reach a guest
 * (`stoat ls`) never pay for loading ssh2.
 */
export const LazyGuestTransportLive = Layer.scoped(
  GuestTransport,
  Effect.gen(function* () {
    const scope = yield* Effect.scope
    let loaded = false
    const live = yield* Effect.cached(
      Effect.flatMap(
        Effect.promise(() => import("./live.js")),
        (module) => Effect.tap(Scope.extend(module.makeGuestTransport(), scope), () => (loaded = true))
      )
    )
    // Waiting for sshd (`up --wait`) needs no ssh2: the banner check is plain TCP and loads nothing.
    const probe = yield* makeSshProbe()
    return {
      exec: (target, argv, options) => Effect.flatMap(live, (transport) => transport.exec(target, argv, options)),
      readFile: (target, path, options) =>
        Effect.flatMap(live, (transport) => transport.readFile(target, path, options)),
      writeFile: (target, path, data, options) =>
        Effect.flatMap(live, (transport) => transport.writeFile(target, path, data, options)),
      upload: (target, local, remote) => Effect.flatMap(live, (transport) => transport.upload(target, local, remote)),
      download: (target, remote, local) =>
        Effect.flatMap(live, (transport) => transport.download(target, remote, local)),
      probe,
      // Nothing loaded, nothing connected: stopping a VM never loads ssh2 just to let go of nothing.
      release: (vm) =>
        Effect.suspend(() => (loaded ? Effect.flatMap(live, (transport) => transport.release(vm)) : Effect.void))
    }
  })
)
