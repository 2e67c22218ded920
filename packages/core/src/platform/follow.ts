import { constants } from "node:fs"
import { open, stat } from "node:fs/promises"
import { Duration, Effect, Option, Ref, Schedule, Stream } from "effect"

/** A missing (or vanished) file has nothing in it yet. */
const sizeOf = (path: string) =>
  Effect.promise(() =>
    stat(path).then(
      (info) => info.size,
      () => 0
    )
  )

/** Bytes `from` up to `to`; opened without blocking, so a FIFO put in the file's place cannot stall it. */
const readRange = (path: string, from: number, to: number) =>
  Effect.promise(async () => {
    const file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined)
    if (file === undefined) return new Uint8Array(0)
    try {
      const buffer = Buffer.alloc(to - from)
      const { bytesRead } = await file.read(buffer, 0, buffer.length, from)
      return new Uint8Array(buffer.subarray(0, bytesRead))
    } finally {
      await file.close()
    }
  })

/**
 * The bytes appended to a file from now on, looked for every `every` (`tail -f`): a file cut
 * shorter (a log rotated or cleared) is followed from its top again. At most `maxChunk` bytes
 * are read per look, so a file that grows by gigabytes at once (a sparse file) is followed in
 * pieces rather than read into one buffer. Never ends by itself.
 */
export const followFile = (
  path: string,
  every: Duration.DurationInput = Duration.millis(300),
  maxChunk = 1024 * 1024
): Stream.Stream<Uint8Array> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const offset = yield* Ref.make(yield* sizeOf(path))
      const appended = Effect.gen(function* () {
        const last = yield* Ref.get(offset)
        const size = yield* sizeOf(path)
        const from = size < last ? 0 : last
        if (size <= from) {
          yield* Ref.set(offset, size)
          return Option.none()
        }
        const bytes = yield* readRange(path, from, Math.min(size, from + maxChunk))
        yield* Ref.set(offset, from + bytes.length)
        return bytes.length > 0 ? Option.some(bytes) : Option.none()
      })
      return Stream.repeatEffectWithSchedule(appended, Schedule.spaced(every)).pipe(Stream.filterMap((bytes) => bytes))
    })
  )
