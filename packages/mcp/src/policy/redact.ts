/** Keys whose values never leave the server: each becomes "<set>" or "<unset>". */
export const SECRET_KEYS: ReadonlySet<string> = new Set(["secrets", "console_password", "authkey", "password", "token"])

const isUnset = (value: unknown): boolean =>
  value === undefined ||
  value === null ||
  value === "" ||
  (typeof value === "object" && Object.keys(value as object).length === 0)

/** A copy of `value` with every secret-named field masked, at any depth. */
export const redact = <T>(value: T): T => {
  if (Array.isArray(value)) return value.map(redact) as T
  if (typeof value !== "object" || value === null) return value
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value))
    out[key] = SECRET_KEYS.has(key) ? (isUnset(inner) ? "<unset>" : "<set>") : redact(inner)
  return out as T
}
