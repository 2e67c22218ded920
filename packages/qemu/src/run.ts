import { execFile } from "node:child_process"
import { Effect } from "effect"

export interface RunOutput {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a program without a shell and collects its output. Fails only when it cannot be run at all
 * (`missing` when it is not installed); a non-zero exit is a result the caller interprets.
 * Interrupting the effect kills the program.
 */
export const runProgram = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly timeoutMs?: number } = {}
): Effect.Effect<RunOutput, { readonly missing: boolean; readonly message: string }> =>
  Effect.async((resume) => {
    const child = execFile(
      file,
      [...args],
      { timeout: options.timeoutMs ?? 120_000, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error && typeof error.code === "string") {
          resume(Effect.fail({ missing: error.code === "ENOENT", message: `${file}: ${error.message}` }))
          return
        }
        if (error?.killed) {
          resume(Effect.fail({ missing: false, message: `${file} ${args[0] ?? ""} did not finish in ${options.timeoutMs ?? 120_000} ms` }))
          return
        }
        resume(Effect.succeed({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr }))
      }
    )
    return Effect.sync(() => {
      child.kill("SIGKILL")
    })
  })

/**
 * The useful part of a QEMU tool's stderr: its last non-empty lines (`lines`, default 3) without
 * the "program: " prefixes, and without `warning:` lines when `skipWarnings` is set.
 */
export const stderrMessage = (stderr: string, fallback: string, options: { readonly lines?: number; readonly skipWarnings?: boolean } = {}): string => {
  const lines = stderr
    .split("\n")
    .map((line) => line.replace(/^[\w./-]*qemu[\w-]*: /, "").trim())
    .filter((line) => line !== "" && !(options.skipWarnings === true && /^warning:/i.test(line)))
  return lines.length > 0 ? lines.slice(-(options.lines ?? 3)).join("; ") : fallback
}
