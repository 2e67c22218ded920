import { Effect } from "effect"
import { runChild } from "./child.js"

/** qemu-img's answers are small; more than this is a runaway program. */
const MAX_OUTPUT_BYTES = 64 * 1024 * 1024

export interface RunOutput {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs a program without a shell and collects its output. Fails only when it cannot be run at all
 * (`missing` when it is not installed) or outlives `timeoutMs` (default 2 minutes); a non-zero exit
 * is a result the caller interprets. Interrupting the effect kills the program.
 */
export const runProgram = (
  file: string,
  args: ReadonlyArray<string>,
  options: { readonly timeoutMs?: number } = {}
): Effect.Effect<RunOutput, { readonly missing: boolean; readonly message: string }> => {
  const timeoutMs = options.timeoutMs ?? 120_000
  return Effect.flatMap(runChild(file, args, { timeoutMs, maxBytes: MAX_OUTPUT_BYTES }), (exit) => {
    if (exit.timedOut)
      return Effect.fail({ missing: false, message: `${file} ${args[0] ?? ""} did not finish in ${timeoutMs} ms` })
    if (exit.overflowed)
      return Effect.fail({
        missing: false,
        message: `${file} ${args[0] ?? ""} wrote more than ${MAX_OUTPUT_BYTES} bytes`
      })
    return Effect.succeed({ code: exit.code, stdout: exit.stdout.toString("utf8"), stderr: exit.stderr })
  })
}

/**
 * The useful part of a QEMU tool's stderr: its last non-empty lines (`lines`, default 3) without
 * the "program: " prefixes, and without `warning:` lines when `skipWarnings` is set.
 */
export const stderrMessage = (
  stderr: string,
  fallback: string,
  options: { readonly lines?: number; readonly skipWarnings?: boolean } = {}
): string => {
  const lines = stderr
    .split("\n")
    .map((line) => line.replace(/^[\w./-]*qemu[\w-]*: /, "").trim())
    .filter((line) => line !== "" && !(options.skipWarnings === true && /^warning:/i.test(line)))
  return lines.length > 0 ? lines.slice(-(options.lines ?? 3)).join("; ") : fallback
}
