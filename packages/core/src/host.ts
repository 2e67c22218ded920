import { access, constants, readFile } from "node:fs/promises"
import { delimiter, join } from "node:path"
import { Context, Effect, Layer } from "effect"

/** Facts about the host that operations read: programs on PATH, free memory, a graphical session. */
export class HostProbe extends Context.Tag("stoat/HostProbe")<
  HostProbe,
  {
    readonly which: (program: string) => Effect.Effect<string | undefined>
    readonly memAvailableMb: Effect.Effect<number>
    readonly graphical: Effect.Effect<boolean>
  }
>() {}

export const findOnPath = async (program: string, path = process.env["PATH"] ?? ""): Promise<string | undefined> => {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue
    const candidate = join(dir, program)
    try {
      await access(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here; keep looking
    }
  }
  return undefined
}

export const HostProbeLive = Layer.succeed(HostProbe, {
  which: (program) => Effect.promise(() => findOnPath(program)),
  memAvailableMb: Effect.promise(async () => {
    const text = await readFile("/proc/meminfo", "utf8").catch(() => "")
    const match = /^MemAvailable:\s+(\d+) kB/m.exec(text)
    return match ? Math.floor(Number(match[1]) / 1024) : 0
  }),
  graphical: Effect.sync(() => {
    const forced = process.env["STOAT_GRAPHICAL"]
    if (forced === "0" || forced === "1") return forced === "1"
    return Boolean(process.env["DISPLAY"] || process.env["WAYLAND_DISPLAY"])
  })
})
