import { timingSafeEqual } from "node:crypto"
import { isIP } from "node:net"

/**
 * The loopback guard every local HTTP server of ours (`stoat mcp --http`, `toolkit mcp serve`)
 * puts in front of its handler: the listen address must be loopback unless the frontend lets
 * it be otherwise (the toolkit's --allow-remote), the Host and Origin headers must name a
 * loopback host (a DNS rebinding page carries its own name there), and an optional bearer
 * token must match.
 */

/** The names `parseLoopbackAddress` accepts: stoat's listener takes only these three. */
const LOOPBACK_NAMES = new Set(["127.0.0.1", "::1", "localhost"])

/**
 * True for a host only this machine reaches: localhost, 127.0.0.0/8 and ::1 (bracketed or
 * not, also IPv4-mapped). A literal loopback address in Host or Origin cannot come from a
 * rebinding page, whose Host is its own DNS name.
 */
export const isLoopbackHost = (host: string): boolean => {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1")
  if (h === "localhost") return true
  if (isIP(h) === 4) return h.startsWith("127.")
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h)
  return false
}

export interface ListenAddress {
  readonly host: string
  readonly port: number
}

/**
 * Parses `host:port` (`[::1]:port` for IPv6) and refuses anything but a loopback host.
 * Returns the address, or a message saying what is wrong and what to use instead.
 */
export const parseLoopbackAddress = (text: string): ListenAddress | { readonly error: string } => {
  const bracketed = /^\[([^\]]*)\]:(\d+)$/.exec(text)
  const plain = bracketed ? null : /^([^:]*):(\d+)$/.exec(text)
  const host = (bracketed?.[1] ?? plain?.[1] ?? "").toLowerCase()
  const portText = bracketed?.[2] ?? plain?.[2]
  if (portText === undefined) {
    return { error: `"${text}" is not an address: use host:port, e.g. 127.0.0.1:7777 or [::1]:7777` }
  }
  const port = Number(portText)
  if (!Number.isInteger(port) || port < 0 || port > 65535) return { error: `port ${portText} is out of range 0..65535` }
  if (!LOOPBACK_NAMES.has(host)) {
    return {
      error: `refusing to listen on "${host || "(all interfaces)"}": the HTTP address must be loopback (127.0.0.1, ::1 or localhost), since anything else would let other machines reach the server`
    }
  }
  return { host, port }
}

/** The hostname of a Host header value without its port; IPv6 loses its brackets. */
const hostOfHeader = (value: string): string => {
  const h = value.trim().toLowerCase()
  if (h.startsWith("[")) return h.slice(1, h.indexOf("]"))
  const colon = h.lastIndexOf(":")
  return colon === -1 ? h : h.slice(0, colon)
}

export interface GuardOptions {
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  readonly token?: string
  /**
   * The server listens beyond loopback on purpose (the toolkit's --allow-remote with a
   * non-loopback host): clients reach it under other names, so Host and Origin are not checked.
   */
  readonly allowRemote?: boolean
}

export interface RequestHeaders {
  readonly host?: string | undefined
  readonly origin?: string | undefined
  readonly authorization?: string | undefined
}

export type GuardVerdict =
  | { readonly ok: true }
  | {
      readonly ok: false
      readonly status: 401 | 403
      readonly message: string
      readonly headers: Readonly<Record<string, string>>
    }

const sameSecret = (given: string, expected: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Decides one request: 403 for a foreign Host or Origin, 401 for a missing or wrong token. */
export const checkRequest = (headers: RequestHeaders, options: GuardOptions = {}): GuardVerdict => {
  if (options.allowRemote === true) return checkToken(headers, options)
  if (headers.host === undefined || !isLoopbackHost(hostOfHeader(headers.host))) {
    return {
      ok: false,
      status: 403,
      message: `Forbidden: Host ${JSON.stringify(headers.host ?? "")} is not a loopback name`,
      headers: {}
    }
  }
  if (headers.origin !== undefined) {
    let hostname = ""
    try {
      hostname = new URL(headers.origin).hostname.toLowerCase()
    } catch {
      hostname = ""
    }
    if (!isLoopbackHost(hostname)) {
      return {
        ok: false,
        status: 403,
        message: `Forbidden: Origin ${JSON.stringify(headers.origin)} is not a loopback origin`,
        headers: {}
      }
    }
  }
  return checkToken(headers, options)
}

const checkToken = (headers: RequestHeaders, options: GuardOptions): GuardVerdict => {
  if (options.token !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? "")
    if (!match || !sameSecret(match[1]!, options.token)) {
      return {
        ok: false,
        status: 401,
        message: "Unauthorized: this server needs Authorization: Bearer <token>",
        headers: { "www-authenticate": "Bearer" }
      }
    }
  }
  return { ok: true }
}
