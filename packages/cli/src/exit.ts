/** Resolves once everything written to `stream` so far has reached the reader (a pipe drains in 64 KiB steps). */
const written = (stream: NodeJS.WriteStream): Promise<void> =>
  stream.destroyed || !stream.writable ? Promise.resolve() : new Promise((resolve) => stream.write("", () => resolve()))

/**
 * Exits with `code` after stdout and stderr have been written out: `process.exit` alone drops
 * whatever a pipe had not yet taken, cutting output (and a `--json` line) at 64 KiB.
 */
export const exitWhenWritten = async (code: number): Promise<never> => {
  await Promise.all([written(process.stdout), written(process.stderr)])
  process.exit(code)
}
