/** Resolves on SIGINT or SIGTERM: long-running commands end cleanly. */
export const waitForStop = (): Promise<string> =>
  new Promise((resolve) => {
    const done = (reason: string): void => {
      process.off("SIGINT", onInt)
      process.off("SIGTERM", onTerm)
      resolve(reason)
    }
    const onInt = (): void => done("SIGINT")
    const onTerm = (): void => done("SIGTERM")
    process.once("SIGINT", onInt)
    process.once("SIGTERM", onTerm)
  })
