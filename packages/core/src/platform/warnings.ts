/** Non-fatal notices (unknown keys, skipped files). stderr only: stdout carries `--json` and MCP stdio. */
const seen = new Set<string>()
export const warn = (message: string): void => {
  if (seen.has(message)) return
  seen.add(message)
  process.stderr.write(`warning: ${message}\n`)
}
