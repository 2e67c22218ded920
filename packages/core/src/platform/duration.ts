/**
 * Go-style durations as the original takes them ("90s", "2m", "1m30s", "500ms", "1h"), in
 * milliseconds; undefined for anything else. Recipe manifests allow the one-unit subset.
 */
export const parseDurationMs = (text: string): number | undefined => {
  const match = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/.exec(text)
  if (match === null || text === "") return undefined
  const [, h, m, s, ms] = match
  return ((Number(h ?? 0) * 60 + Number(m ?? 0)) * 60 + Number(s ?? 0)) * 1000 + Number(ms ?? 0)
}
