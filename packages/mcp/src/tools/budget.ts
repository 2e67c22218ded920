/**
 * A call without a progress token must answer before its client gives up: the SDK's default
 * request timeout is 60 s, and nothing resets it. With a token, progress keeps the request alive.
 */
export const DEFAULT_CALL_BUDGET_SECONDS = 50

/**
 * The timeout_seconds a budgeted call may use: its budget less the time to boot, connect and
 * report the partial result (5 s, or half of a small budget).
 */
export const timeoutCapSeconds = (budgetSeconds: number): number =>
  Math.max(1, Math.floor(budgetSeconds - Math.min(5, budgetSeconds / 2)))

/** What a tool's description says about the budget (only tools that may run long get it). */
export const budgetNote = (budgetSeconds: number, hasTimeout: boolean): string =>
  ` Without a progress token: answers within ${budgetSeconds} s${hasTimeout ? `, timeout_seconds ≤ ${timeoutCapSeconds(budgetSeconds)}` : ""} (see guide).`
