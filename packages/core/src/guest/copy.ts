import { Effect } from "effect"
import { GuestTransport, type SshTarget } from "../ports/guest-transport.js"
import * as fs from "../platform/fs.js"
import { openForRead, openForWrite, resolveHostPath } from "./confine.js"

export interface CopyRequest {
  readonly local: string
  readonly remote: string
  /** The shared folder the host path must stay in; undefined for a person at the CLI. */
  readonly shared: string | undefined
}

/** Creates the shared folder on first use (a VM that never started has none yet). */
const ensureShared = (shared: string | undefined) => (shared === undefined ? Effect.void : fs.makeDirectory(shared))

/** Streams a host file to the guest through the opened, re-checked descriptor. Returns the resolved host path. */
export const copyToGuest = (target: SshTarget, request: CopyRequest) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* ensureShared(request.shared)
      const resolved = yield* resolveHostPath(request.local, request.shared)
      const opened = yield* openForRead(resolved, request.local, request.shared)
      yield* (yield* GuestTransport).upload(target, opened.path, request.remote)
      return resolved
    })
  )

/** Streams a guest file into the host path (temp file + rename in the re-checked folder). Returns the resolved host path. */
export const copyFromGuest = (target: SshTarget, request: CopyRequest) =>
  Effect.scoped(
    Effect.gen(function* () {
      yield* ensureShared(request.shared)
      const resolved = yield* resolveHostPath(request.local, request.shared)
      const destination = yield* openForWrite(resolved, request.local, request.shared)
      yield* (yield* GuestTransport).download(target, request.remote, destination)
      return resolved
    })
  )
