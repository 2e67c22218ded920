import { Effect, Either } from "effect"
import { runChild } from "../child.js"

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
export async function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  let partial = ""
  const onStderrLine = opts.onStderrLine
  const exit = await Effect.runPromise(
    Effect.either(
      runChild(cmd, args, {
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        ...(opts.env !== undefined ? { env: opts.env } : {}),
        ...(opts.input !== undefined ? { input: opts.input } : {}),
        ...(onStderrLine !== undefined
          ? {
              onStderr: (chunk: string) => {
                const lines = (partial + chunk).split("\n")
                partial = lines.pop() ?? ""
                for (const line of lines) onStderrLine(line)
              }
            }
          : {})
      })
    )
  )
  if (Either.isLeft(exit)) {
    throw new Error(
      exit.left.missing ? `${cmd} not found on PATH (needed by the tiny-guest builder)` : exit.left.message
    )
  }
  const { code, signal, stdout, stderr } = exit.right
  if (code === 0) return { stdout, stderr }
  const tail = stderr.trim().split("\n").slice(-8).join("\n")
  throw new Error(`${[cmd, ...args].join(" ")} failed (${signal ?? `exit ${code}`})${tail ? `:\n${tail}` : ""}`)
}

export async function runText(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<string> {
  return (await run(cmd, args, opts)).stdout.toString("utf8")
}
