import { configDbPath } from "@stoat/core/profiles"

/**
 * Everything a command may touch of its surroundings. Commands never use process.stdout,
 * process.stderr or process.stdin directly: the CLI hands them the process streams, a tool call
 * hands each call its own buffers. That is what lets tool calls run concurrently in one process
 * without swapping globals.
 */
export interface CommandIO {
  readonly mode: "cli" | "tool"
  readonly out: (chunk: string | Uint8Array) => void
  readonly err: (chunk: string) => void
  /** All of stdin. Empty inside a tool call. */
  readonly stdin: () => Promise<Uint8Array>
  readonly stdinIsTTY: boolean
  readonly stdoutIsTTY: boolean
  /** Aborted when a tool call times out or is cancelled (never on the command line). */
  readonly signal: AbortSignal
  /** The per-user config.db. */
  readonly configDb: string
  readonly env: NodeJS.ProcessEnv
}

let stdinCache: Promise<Uint8Array> | undefined

const readProcessStdin = (): Promise<Uint8Array> =>
  (stdinCache ??= new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = []
    process.stdin.on("data", (chunk: Buffer) => chunks.push(chunk))
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
  signal: new AbortController().signal,
  configDb: configDbPath("toolkit"),
  env: process.env
})

/** Output captured for one tool call. */
export interface Captured {
  readonly io: CommandIO
  readonly stdout: () => string
  readonly stderr: () => string
}

export const captureIO = (signal: AbortSignal): Captured => {
  const out: Buffer[] = []
  const err: Buffer[] = []
  const toBuffer = (chunk: string | Uint8Array): Buffer => (typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk))
  return {
    io: {
      mode: "tool",
      out: (chunk) => void out.push(toBuffer(chunk)),
      err: (chunk) => void err.push(toBuffer(chunk)),
      stdin: async () => new Uint8Array(0),
      stdinIsTTY: false,
      stdoutIsTTY: false,
      signal,
      configDb: configDbPath("toolkit"),
      env: process.env
    },
    stdout: () => Buffer.concat(out).toString("utf8"),
    stderr: () => Buffer.concat(err).toString("utf8")
  }
}
