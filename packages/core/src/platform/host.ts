import { access, constants, readFile } from "node:fs/promises"
import { delimiter, join } from "node:path"
import { Config, Context, Effect, Layer, Option } from "effect"

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

const optional = (name: string) =>
  Config.map(
    Config.option(Config.string(name)),
    Option.getOrElse(() => "")
  )

/** `$PATH` through `Config`. */
const PathConfig: Config.Config<string> = optional("PATH")

/** `STOAT_GRAPHICAL=0|1` forces the answer; otherwise a session has `DISPLAY` or `WAYLAND_DISPLAY`. */
export const GraphicalConfig: Config.Config<boolean> = Config.map(
  Config.all([optional("STOAT_GRAPHICAL"), optional("DISPLAY"), optional("WAYLAND_DISPLAY")]),
  ([forced, display, wayland]) => (forced === "0" || forced === "1" ? forced === "1" : Boolean(display || wayland))
)

/** The graphical session is read once, when the layer is built: it does not change under a process. */
export const HostProbeLive = Layer.effect(
  HostProbe,
  Effect.map(Effect.orDie(GraphicalConfig), (graphical) => ({
    which: (program: string) =>
      Effect.flatMap(Effect.orDie(PathConfig), (path) => Effect.promise(() => findOnPath(program, path))),
    memAvailableMb: Effect.promise(async () => {
      const text = await readFile("/proc/meminfo", "utf8").catch(() => "")
      const match = /^MemAvailable:\s+(\d+) kB/m.exec(text)
      return match ? Math.floor(Number(match[1]) / 1024) : 0
    }),
    graphical: Effect.succeed(graphical)
  }))
)
