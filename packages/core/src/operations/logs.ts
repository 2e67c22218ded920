import { Effect, Stream } from "effect"
import { DataRoot } from "../platform/data-root.js"
import { followFile } from "../platform/follow.js"
import { VmStore } from "../vm/store.js"
import { logFile } from "./vm.js"

/**
 * What is appended to the log `stoat logs` reads (a VM's console or apply log, or with no VM
 * stoat's own), as raw bytes from now on: `stoat logs -f` after the tail.
 */
export const followLog = (input: {
  readonly vm?: string | undefined
  readonly which?: "console" | "apply" | undefined
}) =>
  Stream.unwrap(
    Effect.gen(function* () {
      const root = yield* DataRoot
      if (input.vm === undefined) return followFile(logFile(root))
      const record = yield* (yield* VmStore).get(input.vm)
      return followFile(logFile(root, record.name, input.which ?? "console"))
    })
  )
