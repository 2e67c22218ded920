/**
 * The server's receiving-side rate limits for tools/call: a token bucket per tool and one shared
 * by every tool. Both are checked before either is charged, so a refused call costs nothing.
 */
export interface RateLimits {
  /** Per-tool burst (calls) and refill (calls per second). */
  readonly toolBurst: number
  readonly toolRate: number
  /** Shared burst and refill. */
  readonly burst: number
  readonly rate: number
}

export const DEFAULT_RATE_LIMITS: RateLimits = { toolBurst: 30, toolRate: 0.5, burst: 60, rate: 2 }

class Bucket {
  private tokens: number
  private last: number
  constructor(
    private readonly burst: number,
    private readonly rate: number,
    now: number
  ) {
    this.tokens = burst
    this.last = now
  }
  refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate)
    this.last = now
  }
  get hasToken(): boolean {
    return this.tokens >= 1
  }
  /** Milliseconds until one token is back. */
  get retryMs(): number {
    return this.rate > 0 ? ((1 - this.tokens) / this.rate) * 1000 : Number.POSITIVE_INFINITY
  }
  take(): void {
    this.tokens -= 1
  }
}

export type RateVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly bucket: "tool" | "server"; readonly message: string; readonly retryMs: number }

const retryText = (ms: number): string =>
  Number.isFinite(ms)
    ? `retry in about ${Math.max(1, Math.ceil(ms / 1000))}s`
    : "the refill rate is 0, so no later call will succeed"

export class RateLimiter {
  private readonly tools = new Map<string, Bucket>()
  private readonly shared: Bucket
  constructor(
    private readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
    private readonly now: () => number = () => performance.now()
  ) {
    this.shared = new Bucket(limits.burst, limits.rate, now())
  }

  /** Charges one call to `tool` (undefined: an unknown tool, charged to the shared bucket only). */
  take(tool: string | undefined): RateVerdict {
    const now = this.now()
    this.shared.refill(now)
    let bucket: Bucket | undefined
    if (tool !== undefined) {
      bucket = this.tools.get(tool)
      if (!bucket) {
        bucket = new Bucket(this.limits.toolBurst, this.limits.toolRate, now)
        this.tools.set(tool, bucket)
      }
      bucket.refill(now)
      if (!bucket.hasToken)
        return {
          ok: false,
          bucket: "tool",
          retryMs: bucket.retryMs,
          message: `rate limit reached for ${tool}; ${retryText(bucket.retryMs)}`
        }
    }
    if (!this.shared.hasToken)
      return {
        ok: false,
        bucket: "server",
        retryMs: this.shared.retryMs,
        message: `rate limit reached for the server; ${retryText(this.shared.retryMs)}`
      }
    bucket?.take()
    this.shared.take()
    return { ok: true }
  }
}
