/**
 * The `git` CLI as a port: argv only (never a shell), a timeout, no terminal prompts, no `ext::`
 * transport. Remote recipes and the index clone go through it, so tests use real git on local
 * repositories.
 */
import { execFile } from "node:child_process"
import { Context, Data, Effect, Layer } from "effect"
import { GitRequired, Timeout } from "../../errors.js"

/** git ran and failed; callers turn it into the typed error that fits what they asked for. */
export class GitFailed extends Data.TaggedError("GitFailed")<{
  readonly args: ReadonlyArray<string>
  readonly stderr: string
  readonly exitCode: number
}> {}

export interface GitRunOptions {
  readonly cwd?: string
  readonly timeoutMs?: number
}

export class Git extends Context.Tag("stoat/Git")<
  Git,
  {
    /** Runs `git <args>` and answers its stdout. */
    readonly run: (
      args: ReadonlyArray<string>,
      options?: GitRunOptions
    ) => Effect.Effect<string, GitRequired | GitFailed | Timeout>
  }
>() {}

const DEFAULT_TIMEOUT_MS = 120_000
// Enforced for every call, whatever the user's git config says.
const SAFETY = ["-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false"]

export interface GitOptions {
  /** The environment git runs with (its PATH decides which git); default the process's. */
  readonly env?: NodeJS.ProcessEnv
}

export const makeGit = (options: GitOptions = {}): Context.Tag.Service<Git> => ({
  run: (args, runOptions = {}) =>
    Effect.async<string, GitRequired | GitFailed | Timeout>((resume, signal) => {
      const timeoutMs = runOptions.timeoutMs ?? DEFAULT_TIMEOUT_MS
      execFile(
        "git",
        [...SAFETY, ...args],
        {
          cwd: runOptions.cwd,
          env: {
            ...(options.env ?? process.env),
            GIT_TERMINAL_PROMPT: "0",
            GIT_ASKPASS: "",
            SSH_ASKPASS: "",
            LC_ALL: "C"
          },
          timeout: timeoutMs,
          maxBuffer: 16 * 1024 * 1024,
          signal,
          encoding: "utf8"
        },
        (error, stdout, stderr) => {
          if (error === null) return resume(Effect.succeed(stdout))
          const failure = error as NodeJS.ErrnoException & { killed?: boolean; code?: unknown }
          if (failure.code === "ENOENT") {
            return resume(
              Effect.fail(
                new GitRequired({
                  message: "git is not installed (or not on PATH); remote recipes need it: install git",
                  subject: "git"
                })
              )
            )
          }
          if (failure.killed === true) {
            return resume(
              Effect.fail(
                new Timeout({
                  message: `git ${args[0] ?? ""} did not finish within ${Math.round(timeoutMs / 1000)} s`,
                  subject: "git"
                })
              )
            )
          }
          resume(
            Effect.fail(
              new GitFailed({
                args,
                stderr: String(stderr).trim(),
                exitCode: typeof failure.code === "number" ? failure.code : -1
              })
            )
          )
        }
      )
    })
})

export const GitLive = Layer.sync(Git, () => makeGit())
