/** Resolves on SIGINT or SIGTERM (or when `signal` aborts): long-running commands end cleanly. */
export const waitForStop = (signal?: AbortSignal): Promise<string> =>
  new Promise((resolve) => {
    const done = (reason: string): void => {
      process.off("SIGINT", onInt)
      process.off("SIGTERM", onTerm)
      signal?.removeEventListener("abort", onAbort)
      resolve(reason)
    }
    const onInt = (): void => done("SIGINT")
    const onTerm = (): void => done("SIGTERM")
    const onAbort = (): void => done("abort")
    process.once("SIGINT", onInt)
    process.once("SIGTERM", onTerm)
    signal?.addEventListener("abort", onAbort, { once: true })
  })
