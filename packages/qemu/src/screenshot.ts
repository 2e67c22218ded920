import { mkdir, readFile } from "node:fs/promises"
import { dirname, resolve } from "node:path"
import { Effect } from "effect"
import { NotRunning, ScreenshotFailed, type VmRef } from "@stoat/core"
import { vmFiles } from "./argv.js"
import { readRunState } from "./process.js"
import { qmpExecute } from "./qmp.js"

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** Width and height from a PNG's IHDR chunk, which must come first; undefined if it is not a PNG. */
export const pngSize = (data: Buffer): { readonly width: number; readonly height: number } | undefined => {
  if (data.length < 24 || !data.subarray(0, 8).equals(PNG_SIGNATURE) || data.toString("latin1", 12, 16) !== "IHDR") return undefined
  return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) }
}

/** The VM's display as a PNG written by QEMU itself (QMP screendump, format png since QEMU 7.1). */
export const screenshot = (
  vm: VmRef,
  out: string
): Effect.Effect<{ readonly width: number; readonly height: number; readonly bytes: number }, ScreenshotFailed | NotRunning> =>
  Effect.gen(function* () {
    const state = yield* Effect.promise(() => readRunState(vm))
    if (!state.running) return yield* new NotRunning({ message: `VM "${vm.name}" is not running; start it to take a screenshot`, subject: vm.name })
    // QEMU runs with "/" as its working directory.
    const path = resolve(out)
    const failed = (why: string) => new ScreenshotFailed({ message: `screenshot of VM "${vm.name}" failed: ${why}`, subject: vm.name })
    yield* Effect.tryPromise({ try: () => mkdir(dirname(path), { recursive: true }), catch: (cause) => failed(String(cause)) })
    yield* qmpExecute(vmFiles(vm.dir).qmp, "screendump", { filename: path, format: "png" }, { subject: vm.name, commandTimeoutMs: 20_000 }).pipe(
      Effect.mapError((error) => failed(error.message))
    )
    const data = yield* Effect.tryPromise({ try: () => readFile(path), catch: () => failed(`QEMU wrote no file at ${path}`) })
    const size = pngSize(data)
    if (!size) return yield* failed(`${path} is not a PNG image`)
    return { ...size, bytes: data.length }
  })
