import { ToolkitError } from "../runtime/errors.js"
import type { CommandIO } from "../runtime/io.js"
import { waitForStop } from "../runtime/stop.js"
import { EFFECTS, renderFrame, type Frame } from "./effects.js"

const FRAME_MS = 50

/** Plays an effect for `frames` frames at the terminal's size; restores the terminal afterwards. */
export const play = async (io: CommandIO, name: keyof typeof EFFECTS, frames: number): Promise<void> => {
  // The effects draw with cursor movement and colours: a pipe or a file would only get noise.
  if (!io.stdoutIsTTY) throw new ToolkitError(`demoscene ${name} needs a terminal, but standard output is not a TTY`)
  const columns = Math.max(10, process.stdout.columns ?? 80)
  const rows = Math.max(4, (process.stdout.rows ?? 24) - 1)
  const frame: Frame = { width: columns, height: rows * 2, rgb: new Uint8Array(columns * rows * 2 * 3) }
  const effect = EFFECTS[name]()
  const stop = new AbortController()
  const stopped = waitForStop().then(() => stop.abort())
  io.out("\x1b[?1049h\x1b[?25l\x1b[2J")
  try {
    for (let t = 0; t < frames && !stop.signal.aborted; t++) {
      const started = Date.now()
      effect(frame, t)
      io.out(renderFrame(frame))
      const wait = FRAME_MS - (Date.now() - started)
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)))
    }
  } finally {
    io.out("\x1b[0m\x1b[?25h\x1b[?1049l")
    stop.abort()
    void stopped
  }
}
