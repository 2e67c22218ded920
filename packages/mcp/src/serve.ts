import { readFile } from "node:fs/promises"
import { DEFAULT_RATE_LIMITS, type RateLimits } from "./policy/rate-limit.js"
import { makeStoatMcp } from "./server.js"
import { liveRuntime } from "./live.js"
import { TOOLSETS, type Toolset } from "./tools/registry.js"
import { serveStdio } from "./transports/stdio.js"

export interface ServeOptions {
  /** host:port for Streamable HTTP; absent: stdio. */
  readonly http?: string
  /** A file whose first line is the bearer token HTTP clients must send. */
  readonly tokenFile?: string
  /** Unset fields keep their defaults. */
  readonly limits?: { readonly [K in keyof RateLimits]?: number | undefined }
  /** False (--no-confirm): deletions run unconfirmed when the client cannot elicit, as in the original. */
  readonly confirmDeletions?: boolean
  /** Seconds a call without a progress token answers within (default 50). */
  readonly callBudgetSeconds?: number | undefined
  /** With http: sessions kept at once (default 64). */
  readonly maxSessions?: number | undefined
  /** Comma-separated toolsets to serve (`--toolsets vm,guest`); absent: all. */
  readonly toolsets?: string
  /** Serve only the read-only tools. */
  readonly readOnly?: boolean
}

/** A refusal at start: printed as one line on stderr, exit status 2. */
export class ServeRefused extends Error {
  override readonly name = "ServeRefused"
}

const checkLimits = (limits: Partial<RateLimits>): void => {
  for (const [key, value] of Object.entries(limits)) {
    if (value === undefined) continue
    const whole = key.endsWith("Burst") || key === "burst"
    if (!Number.isFinite(value) || value < 0 || (whole && (!Number.isInteger(value) || value < 1))) {
      throw new ServeRefused(
        `${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be ${whole ? "a whole number ≥ 1" : "a number ≥ 0"}, got ${value}`
      )
    }
  }
}

const parseToolsets = (text: string): ReadonlyArray<Toolset> => {
  const names = text
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "")
  const unknown = names.filter((name) => !(TOOLSETS as ReadonlyArray<string>).includes(name))
  if (names.length === 0 || unknown.length > 0) {
    throw new ServeRefused(
      `--toolsets takes a comma-separated list of ${TOOLSETS.join(", ")}${unknown.length > 0 ? `; unknown: ${unknown.join(", ")}` : ""}`
    )
  }
  return names as ReadonlyArray<Toolset>
}

/** `stoat mcp [serve]`: stdio by default, loopback Streamable HTTP with `http`. Returns when the transport ends. */
export const serve = async (options: ServeOptions): Promise<void> => {
  const limits = Object.fromEntries(
    Object.entries(options.limits ?? {}).filter(([, value]) => value !== undefined)
  ) as Partial<RateLimits>
  checkLimits(limits)
  const budget = options.callBudgetSeconds
  if (budget !== undefined && !(Number.isInteger(budget) && budget >= 1 && budget <= 600))
    throw new ServeRefused(`call-budget must be a whole number of seconds from 1 to 600, got ${budget}`)
  const maxSessions = options.maxSessions
  if (maxSessions !== undefined) {
    if (options.http === undefined) throw new ServeRefused("--max-sessions needs --http: stdio serves one client")
    if (!(Number.isInteger(maxSessions) && maxSessions >= 1))
      throw new ServeRefused(`max-sessions must be a whole number ≥ 1, got ${maxSessions}`)
  }
  const tools = {
    ...(options.toolsets !== undefined ? { toolsets: parseToolsets(options.toolsets) } : {}),
    ...(options.readOnly ? { readOnly: true } : {})
  }
  let token: string | undefined
  if (options.tokenFile !== undefined) {
    if (options.http === undefined) throw new ServeRefused("--token-file needs --http: stdio has no tokens")
    const text = await readFile(options.tokenFile, "utf8").catch((error: Error) => {
      throw new ServeRefused(`cannot read the token file ${options.tokenFile}: ${error.message}`)
    })
    token = text.split("\n")[0]?.trim()
    if (!token) throw new ServeRefused(`the token file ${options.tokenFile} is empty`)
  }
  const runtime = liveRuntime()
  const mcp = makeStoatMcp({
    runtime,
    limits: { ...DEFAULT_RATE_LIMITS, ...limits },
    tools,
    ...(options.confirmDeletions !== undefined ? { confirmDeletions: options.confirmDeletions } : {}),
    ...(budget !== undefined ? { callBudgetSeconds: budget } : {})
  })
  try {
    if (options.http === undefined) {
      await serveStdio(mcp)
      return
    }
    const { AddressRefused, serveHttp } = await import("./transports/http.js")
    let running
    try {
      running = await serveHttp(mcp, {
        address: options.http,
        ...(token !== undefined ? { token } : {}),
        ...(maxSessions !== undefined ? { maxSessions } : {}),
        log: (line) => process.stderr.write(`${line}\n`)
      })
    } catch (error) {
      if (error instanceof AddressRefused) throw new ServeRefused(error.message)
      const code = (error as { code?: string }).code
      if (code === "EADDRINUSE" || code === "EACCES" || code === "EADDRNOTAVAIL")
        throw new ServeRefused(`cannot listen on ${options.http}: ${(error as Error).message}`)
      throw error
    }
    process.stderr.write(
      `stoat mcp: serving Streamable HTTP at ${running.url}${token !== undefined ? " (bearer token required)" : ""}\n`
    )
    await new Promise<void>((resolve) => {
      process.once("SIGINT", resolve)
      process.once("SIGTERM", resolve)
    })
    await running.close()
  } finally {
    await runtime.dispose().catch(() => undefined)
  }
}
