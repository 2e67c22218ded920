import { spawn } from "node:child_process"
import type { Readable, Writable } from "node:stream"
import { Effect } from "effect"

/** The one way @stoat/qemu runs a program: no shell, output collected or watched, killed when interrupted. */
export interface ChildOptions {
  readonly cwd?: string
  readonly env?: NodeJS.ProcessEnv
  /** Written to its stdin, which then closes (a stream is piped, with back-pressure); without it stdin is /dev/null. */
  readonly input?: Buffer | string | Readable
  /** Where its stdout goes: collected (default), dropped, or piped into a stream that is ended with it. */
  readonly stdout?: "collect" | "ignore" | Writable
  /** Each chunk as it arrives; "stop" kills the program and ends the run with `stopped` set. */
  readonly onStdout?: (chunk: Buffer) => "stop" | void
  readonly onStderr?: (chunk: string, soFar: string) => "stop" | void
  /** Killed (SIGKILL) once it runs this long; the run ends with `timedOut` set. */
  readonly timeoutMs?: number
  /** Its own process group, so a program that daemonizes outlives this one. */
  readonly detached?: boolean
  /**
   * Its own process group, killed whole: a timeout or an interrupt also ends what it started
   * (virsh's ssh to a libvirt host, which would otherwise wait on a host that does not answer).
   */
  readonly killGroup?: boolean
  /** Most bytes of each stream collected (default no limit): past it the program is killed and the run ends `overflowed`. */
  readonly maxBytes?: number
}

export interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: Buffer
  readonly stderr: string
  readonly timedOut: boolean
  /** A watcher said "stop". */
  readonly stopped: boolean
  readonly overflowed: boolean
}

/** It could not be run at all; `missing` when the program does not exist. */
export interface ChildSpawnFailure {
  readonly missing: boolean
  readonly message: string
}

/** Runs `file` with `args` until it exits (a non-zero exit is a result, not a failure). */
export const runChild = (
  file: string,
  args: ReadonlyArray<string>,
  options: ChildOptions = {}
): Effect.Effect<ChildExit, ChildSpawnFailure> =>
  Effect.async((resume) => {
    const stdoutMode = options.stdout ?? "collect"
    const child = spawn(file, [...args], {
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      env: options.env ?? process.env,
      detached: options.detached === true || options.killGroup === true,
      stdio: [options.input === undefined ? "ignore" : "pipe", stdoutMode === "ignore" ? "ignore" : "pipe", "pipe"]
    })
    const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY
    const stdoutChunks: Buffer[] = []
    let stdoutBytes = 0
    let stderr = ""
    let timedOut = false
    let stopped = false
    let overflowed = false
    let done = false
    const kill = () => {
      if (child.exitCode !== null || child.signalCode !== null) return
      if (options.killGroup === true && child.pid !== undefined) {
        try {
          return process.kill(-child.pid, "SIGKILL")
        } catch {
          // Its group is gone already: the program itself is all there is to kill.
        }
      }
      child.kill("SIGKILL")
    }
    const timer =
      options.timeoutMs === undefined ? undefined : setTimeout(() => ((timedOut = true), kill()), options.timeoutMs)
    const stop = () => ((stopped = true), kill())
    if (child.stdout !== null) {
      if (typeof stdoutMode === "object") child.stdout.pipe(stdoutMode)
      else {
        child.stdout.on("data", (chunk: Buffer) => {
          stdoutChunks.push(chunk)
          stdoutBytes += chunk.length
          if (stdoutBytes > maxBytes) (overflowed = true), kill()
          if (options.onStdout?.(chunk) === "stop") stop()
        })
      }
    }
    child.stderr?.setEncoding("utf8")
    child.stderr?.on("data", (chunk: string) => {
      stderr += chunk
      if (stderr.length > maxBytes) (overflowed = true), kill()
      if (options.onStderr?.(chunk, stderr) === "stop") stop()
    })
    if (options.input !== undefined && child.stdin !== null) {
      // It may exit before reading everything; "close" reports how it ended.
      child.stdin.on("error", () => undefined)
      if (typeof options.input === "string" || Buffer.isBuffer(options.input)) child.stdin.end(options.input)
      else options.input.pipe(child.stdin)
    }
    child.on("error", (error: NodeJS.ErrnoException) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(Effect.fail({ missing: error.code === "ENOENT", message: `${file}: ${error.message}` }))
    })
    child.on("close", (code, signal) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resume(
        Effect.succeed({ code, signal, stdout: Buffer.concat(stdoutChunks), stderr, timedOut, stopped, overflowed })
      )
    })
    return Effect.sync(() => {
      done = true
      clearTimeout(timer)
      kill()
    })
  })
