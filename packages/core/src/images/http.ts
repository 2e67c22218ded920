import type { IncomingMessage } from "node:http"
import { STOAT_VERSION } from "../version.js"

/** Phase timeouts. Parameters so tests can use a few hundred milliseconds. */
export interface DownloadTimeouts {
  /** TCP connect plus TLS handshake. */
  readonly connectMs: number
  /** From the request being sent to the response headers. */
  readonly headersMs: number
  /** Longest gap with zero body bytes before the download counts as stalled. */
  readonly stallMs: number
}

export const DEFAULT_TIMEOUTS: DownloadTimeouts = { connectMs: 15_000, headersMs: 30_000, stallMs: 60_000 }

/** A transfer failure with a human reason; `stalled` marks the zero-bytes-for-stallMs case. */
export class TransferError extends Error {
  constructor(
    message: string,
    readonly stalled = false
  ) {
    super(message)
  }
}

/** Thrown when the caller's signal aborts; never reported as a network failure. */
export class AbortedError extends Error {}

const MAX_REDIRECTS = 10

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return typeof code === "string" && !error.message.includes(code) ? `${error.message} (${code})` : error.message
  }
  return String(error)
}

/**
 * One GET, redirects followed, resolving once a 2xx response's headers arrive. The connect and
 * header timeouts cover only the phases that can hang without producing bytes; the body has
 * its own stall timer (see `readBody`), so a healthy transfer may take as long as it needs.
 * `node:http`/`node:https` are loaded on first use to keep CLI start-up light.
 */
export const openGet = async (
  href: string,
  signal: AbortSignal,
  timeouts: DownloadTimeouts
): Promise<{ readonly response: IncomingMessage; readonly url: string }> => {
  let current = href
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const response = await requestOnce(current, signal, timeouts)
    const status = response.statusCode ?? 0
    if (status >= 300 && status < 400 && response.headers.location) {
      response.destroy()
      current = new URL(response.headers.location, current).href
      continue
    }
    if (status < 200 || status >= 300) {
      response.destroy()
      throw new TransferError(
        `HTTP ${status}${response.statusMessage ? ` ${response.statusMessage}` : ""} from ${current}`
      )
    }
    return { response, url: current }
  }
  throw new TransferError(`too many redirects from ${href}`)
}

const requestOnce = async (href: string, signal: AbortSignal, timeouts: DownloadTimeouts): Promise<IncomingMessage> => {
  const target = new URL(href)
  if (target.protocol !== "http:" && target.protocol !== "https:")
    throw new TransferError(`unsupported URL scheme in ${href}`)
  const secure = target.protocol === "https:"
  const transport = secure ? await import("node:https") : await import("node:http")
  if (signal.aborted) throw new AbortedError("aborted")
  return new Promise<IncomingMessage>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined
    let settled = false
    const clear = () => {
      if (timer) clearTimeout(timer)
      timer = undefined
    }
    const finish = (error: Error | undefined, response?: IncomingMessage) => {
      clear()
      signal.removeEventListener("abort", onAbort)
      if (settled) return
      settled = true
      if (error) reject(error)
      else resolve(response!)
    }
    // agent: false gives a fresh socket per request, so the connect timer always sees a dial.
    const request = transport.request(target, {
      method: "GET",
      agent: false,
      headers: { "user-agent": `stoat/${STOAT_VERSION}`, accept: "*/*", "accept-encoding": "identity" }
    })
    const arm = (ms: number, error: () => Error) => {
      clear()
      timer = setTimeout(() => request.destroy(error()), ms)
    }
    const onAbort = () => request.destroy(new AbortedError("aborted"))
    signal.addEventListener("abort", onAbort, { once: true })
    arm(
      timeouts.connectMs,
      () => new TransferError(`timed out connecting to ${target.host} after ${timeouts.connectMs} ms`)
    )
    request.on("socket", (socket) => {
      socket.once(secure ? "secureConnect" : "connect", () =>
        arm(
          timeouts.headersMs,
          () => new TransferError(`no response from ${target.host} within ${timeouts.headersMs} ms`)
        )
      )
    })
    request.on("response", (response) => finish(undefined, response))
    // Stays attached after the response so a late socket error is never an unhandled event.
    request.on("error", (error) =>
      finish(
        error instanceof AbortedError || error instanceof TransferError
          ? error
          : new TransferError(`${target.host}: ${describe(error)}`)
      )
    )
    request.end()
  })
}

/**
 * Streams a response body to `sink`, one chunk at a time (awaited, so a slow disk applies
 * back-pressure). The stall timer restarts with every chunk. A body shorter than its
 * Content-Length, or a connection closed mid-body, is a TransferError.
 */
export const readBody = async (
  response: IncomingMessage,
  signal: AbortSignal,
  stallMs: number,
  sink: (chunk: Buffer) => Promise<void> | void
): Promise<number> => {
  const declared = Number(response.headers["content-length"])
  let timer: NodeJS.Timeout | undefined
  const arm = () => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(
      () =>
        response.destroy(
          new TransferError(`no data received for ${Math.round(stallMs / 1000) || stallMs / 1000} s`, true)
        ),
      stallMs
    )
  }
  const onAbort = () => response.destroy(new AbortedError("aborted"))
  signal.addEventListener("abort", onAbort, { once: true })
  let received = 0
  try {
    if (signal.aborted) throw new AbortedError("aborted")
    arm()
    for await (const chunk of response as AsyncIterable<Buffer>) {
      // The timer measures only waiting on the network, not a slow disk write.
      if (timer) clearTimeout(timer)
      received += chunk.length
      await sink(chunk)
      arm()
    }
  } catch (error) {
    if (error instanceof AbortedError || error instanceof TransferError) throw error
    throw new TransferError(`connection closed after ${received} bytes: ${describe(error)}`)
  } finally {
    if (timer) clearTimeout(timer)
    signal.removeEventListener("abort", onAbort)
  }
  // The for-await can end quietly on some early closes; the declared length is the last word.
  if (Number.isFinite(declared) && received !== declared) {
    throw new TransferError(`download truncated: got ${received} of ${declared} bytes`)
  }
  if (!response.complete) throw new TransferError(`connection closed after ${received} bytes`)
  return received
}

/** A small text resource (checksum file, release index), capped so a wrong URL cannot fill memory. */
export const fetchText = async (
  href: string,
  signal: AbortSignal,
  timeouts: DownloadTimeouts,
  maxBytes = 8 * 1024 * 1024
): Promise<string> => {
  const { response } = await openGet(href, signal, timeouts)
  const chunks: Buffer[] = []
  let size = 0
  await readBody(response, signal, timeouts.stallMs, (chunk) => {
    size += chunk.length
    if (size > maxBytes) {
      response.destroy()
      throw new TransferError(`${href} is larger than ${maxBytes} bytes`)
    }
    chunks.push(chunk)
  })
  return Buffer.concat(chunks).toString("utf8")
}
