/** A failure a command reports as `Error: <message>` with exit code 1. */
export class ToolkitError extends Error {
  override readonly name = "ToolkitError"
  constructor(
    message: string,
    readonly exitCode = 1
  ) {
    super(message)
  }
}

/** oclif parse errors carry a help hint and sometimes a trailing blank line; keep the message. */
export const errorMessage = (error: unknown): string => {
  const raw = error instanceof Error ? error.message : String(error)
  const lines = raw
    .split("\n")
    .map((line) => line.trim())
    // oclif wraps parse failures in a header and a help hint; the failures themselves are the message.
    .filter(
      (line) =>
        line !== "" && !/^See more help with --help$/.test(line) && !/^The following errors? occurred:$/.test(line)
    )
  return lines.join("; ")
}
