import { ToolkitError } from "./errors.js"
import type { CommandIO } from "./io.js"

/**
 * Reads a secret without it ever reaching argv or the screen: from a terminal with echo off,
 * else the first line of stdin.
 */
export const readSecret = async (io: CommandIO, prompt: string): Promise<string> => {
  if (io.mode === "cli" && io.stdinIsTTY && typeof process.stdin.setRawMode === "function") {
    io.err(prompt)
    const stdin = process.stdin
    stdin.setRawMode(true)
    stdin.resume()
    try {
      return await new Promise<string>((resolve, reject) => {
        let secret = ""
        const onData = (data: Buffer): void => {
          for (const ch of data.toString("utf8")) {
            if (ch === "\r" || ch === "\n") {
              stdin.off("data", onData)
              io.err("\n")
              resolve(secret)
              return
            }
            if (ch === "\u0003") {
              stdin.off("data", onData)
              io.err("\n")
              reject(new ToolkitError("cancelled"))
              return
            }
            if (ch === "\u007f" || ch === "\b") secret = secret.slice(0, -1)
            else secret += ch
          }
        }
        stdin.on("data", onData)
      })
    } finally {
      stdin.setRawMode(false)
      stdin.pause()
    }
  }
  const text = Buffer.from(await io.stdin()).toString("utf8")
  return (text.split(/\r?\n/)[0] ?? "").trim()
}
