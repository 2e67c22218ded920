import { randomBytes } from "node:crypto"
import { readFile, rm } from "node:fs/promises"
import { resolve } from "node:path"
import { Effect } from "effect"
import { NotRunning, ScreenshotFailed, type Screenshot, type VmRef } from "@stoat/core"
import { vmFiles } from "./argv.js"
import { readRunState } from "./process.js"
import { qmpExecute } from "./qmp.js"

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** Width and height from a PNG's IHDR chunk, which must come first; undefined if it is not a PNG. */
export const pngSize = (data: Buffer): { readonly width: number; readonly height: number } | undefined => {
  if (data.length < 24 || !data.subarray(0, 8).equals(PNG_SIGNATURE) || data.toString("latin1", 12, 16) !== "IHDR")
    return undefined
  return { width: data.readUInt32BE(16), height: data.readUInt32BE(20) }
}

/**
 * The VM's display as a PNG made by QEMU itself (QMP screendump, format png since QEMU 7.1). QEMU
 * writes it to a file of its own choosing in the VM folder; core puts it where the user asked.
 */
export const screenshot = (vm: VmRef): Effect.Effect<Screenshot, ScreenshotFailed | NotRunning> =>
  Effect.gen(function* () {
    const state = yield* Effect.sync(() => readRunState(vm))
    if (!state.running)
      return yield* new NotRunning({
        message: `VM "${vm.name}" is not running; start it to take a screenshot`,
        subject: vm.name
      })
    const failed = (why: string) =>
      new ScreenshotFailed({ message: `screenshot of VM "${vm.name}" failed: ${why}`, subject: vm.name })
    // Absolute: QEMU runs with "/" as its working directory.
    const path = resolve(vm.dir, `.screendump-${randomBytes(4).toString("hex")}.png`)
    const data = yield* Effect.ensuring(
      Effect.zipRight(
        qmpExecute(
          vmFiles(vm.dir).qmp,
          "screendump",
          { filename: path, format: "png" },
          { subject: vm.name, commandTimeoutMs: 20_000 }
        ).pipe(Effect.mapError((error) => failed(error.message))),
        Effect.tryPromise({ try: () => readFile(path), catch: () => failed("QEMU wrote no file") })
      ),
      Effect.promise(() => rm(path, { force: true }))
    )
    const size = pngSize(data)
    if (!size) return yield* failed("QEMU's screendump is not a PNG image")
    return { png: new Uint8Array(data), ...size }
  })
