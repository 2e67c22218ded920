import { spawn } from "node:child_process"

export interface RunResult {
  readonly stdout: Buffer
  readonly stderr: string
}

export interface RunOptions {
  readonly cwd?: string
  readonly input?: Buffer | string
  readonly env?: NodeJS.ProcessEnv
  /** Called with each line the program writes to stderr, as it arrives (progress of a long build step). */
  readonly onStderrLine?: (line: string) => void
}

/**
 * Runs a program (no shell) and collects its output. Rejects with the command line,
 * exit status and the tail of stderr so build failures are diagnosable from the message.
 */
export function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
    })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout?.on("data", (b: Buffer) => out.push(b))
    let partial = ""
    child.stderr?.on("data", (b: Buffer) => {
      err.push(b)
      if (!opts.onStderrLine) return
      const lines = (partial + b.toString("utf8")).split("\n")
      partial = lines.pop() ?? ""
      for (const line of lines) opts.onStderrLine(line)
    })
    child.on("error", (e: NodeJS.ErrnoException) => {
      reject(
        new Error(
          e.code === "ENOENT" ? `${cmd} not found on PATH (needed by the tiny-guest builder)` : `${cmd}: ${e.message}`
        )
      )
    })
    child.on("close", (code, signal) => {
      const stderr = Buffer.concat(err).toString("utf8")
      if (code === 0) {
        resolve({ stdout: Buffer.concat(out), stderr })
      } else {
        const tail = stderr.trim().split("\n").slice(-8).join("\n")
        reject(
          new Error(`${[cmd, ...args].join(" ")} failed (${signal ?? `exit ${code}`})${tail ? `:\n${tail}` : ""}`)
        )
      }
    })
    if (opts.input !== undefined && child.stdin) {
      child.stdin.on("error", () => {}) // the child may exit before reading everything; "close" reports it
      child.stdin.end(opts.input)
    }
  })
}

export async function runText(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return (await run(cmd, args, opts)).stdout.toString("utf8")
}
