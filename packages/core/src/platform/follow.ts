import { open, stat } from "node:fs/promises"
import { Duration, Effect, Option, Ref, Schedule, Stream } from "effect"

/** A missing (or vanished) file has nothing in it yet. */
const sizeOf = (path: string) => Effect.promise(() => stat(path).then((info) => info.size, () => 0))

const readRange = (path: string, from: number, to: number) =>
  Effect.promise(async () => {
    const file = await open(path, "r").catch(() => undefined)
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
 * shorter (a log rotated or cleared) is followed from its top again. Never ends by itself.
 */
export const followFile = (path: string, every: Duration.DurationInput = Duration.millis(300)): Stream.Stream<Uint8Array> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const offset = yield* Ref.make(yield* sizeOf(path))
      const appended = Effect.gen(function* () {
        const last = yield* Ref.get(offset)
        const size = yield* sizeOf(path)
        const from = size < last ? 0 : last
        yield* Ref.set(offset, size)
        return size > from ? Option.some(yield* readRange(path, from, size)) : Option.none()
      })
      return Stream.repeatEffectWithSchedule(appended, Schedule.spaced(every)).pipe(Stream.filterMap((bytes) => bytes))
    })
  )
