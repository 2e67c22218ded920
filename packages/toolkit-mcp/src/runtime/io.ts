import { configDbPath } from "../store/index.js"
import { ToolkitError } from "./errors.js"
import { INPUT_LIMIT, MAX_INPUT_BYTES } from "./files.js"

/**
 * Everything a command may touch of its surroundings. Commands never use process.stdout,
 * process.stderr or process.stdin directly: the CLI hands them the process streams, a tool call
 * hands each call its own buffers. That is what lets tool calls run concurrently in one process
 * without swapping globals.
 */
export interface CommandIO {
  /**
   * "tool": output is captured, stdin is empty, and the command runs on a pool worker that the
   * server terminates to stop it, so long synchronous work needs no cancellation points.
   */
  readonly mode: "cli" | "tool"
  readonly out: (chunk: string | Uint8Array) => void
  readonly err: (chunk: string) => void
  /** All of stdin (at most MAX_INPUT_BYTES). Empty inside a tool call. */
  readonly stdin: () => Promise<Uint8Array>
  readonly stdinIsTTY: boolean
  readonly stdoutIsTTY: boolean
  /** The per-user config.db. */
  readonly configDb: string
  readonly env: NodeJS.ProcessEnv
}

let stdinCache: Promise<Uint8Array> | undefined

const readProcessStdin = (): Promise<Uint8Array> =>
  (stdinCache ??= new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = []
    let total = 0
    const onData = (chunk: Buffer): void => {
      total += chunk.length
      if (total <= MAX_INPUT_BYTES) return void chunks.push(chunk)
      process.stdin.off("data", onData)
      process.stdin.pause()
      reject(new ToolkitError(`stdin holds more than ${INPUT_LIMIT}`))
    }
    process.stdin.on("data", onData)
    process.stdin.once("end", () => resolve(Buffer.concat(chunks)))
    process.stdin.once("error", reject)
  }))

export const processIO = (): CommandIO => ({
  mode: "cli",
  out: (chunk) => void process.stdout.write(chunk),
  err: (chunk) => void process.stderr.write(chunk),
  stdin: readProcessStdin,
  stdinIsTTY: process.stdin.isTTY === true,
  stdoutIsTTY: process.stdout.isTTY === true,
  configDb: configDbPath("toolkit"),
  env: process.env
})

/** Output captured for one tool call. */
export interface Captured {
  readonly io: CommandIO
  readonly stdout: () => string
  readonly stderr: () => string
  /** True once the command tried to write more than the limit; the rest was dropped. */
  readonly exceeded: () => boolean
}

/** Thrown into the command by the write that crosses a tool call's output limit, to stop it. */
class OutputLimitExceeded extends ToolkitError {}

/** Captures a command's output, keeping at most `limitBytes` of stdout and stderr together. */
export const captureIO = (limitBytes: number): Captured => {
  const out: Buffer[] = []
  const err: Buffer[] = []
  let kept = 0
  let exceeded = false
  const keep = (into: Buffer[], chunk: string | Uint8Array): void => {
    if (exceeded) return
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk)
    if (kept + bytes.length <= limitBytes) {
      kept += bytes.length
      into.push(bytes)
      return
    }
    into.push(bytes.subarray(0, limitBytes - kept))
    kept = limitBytes
    exceeded = true
    throw new OutputLimitExceeded("output limit exceeded")
  }
  return {
    io: {
      mode: "tool",
      out: (chunk) => keep(out, chunk),
      err: (chunk) => keep(err, chunk),
      stdin: async () => new Uint8Array(0),
      stdinIsTTY: false,
      stdoutIsTTY: false,
      configDb: configDbPath("toolkit"),
      env: process.env
    },
    stdout: () => Buffer.concat(out).toString("utf8"),
    stderr: () => Buffer.concat(err).toString("utf8"),
    exceeded: () => exceeded
  }
}
