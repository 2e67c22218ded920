/** Left-aligned columns separated by two spaces, like the original's tables. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)))
  const format = (row: ReadonlyArray<string>) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd()
  return [format(header), ...rows.map(format)].join("\n")
}

const useColour = (): boolean => process.stdout.isTTY === true && !process.env["NO_COLOR"]

/** Colours only the STATE column, and only on a terminal without NO_COLOR. */
export const stateCell = (state: string): string => {
  if (!useColour()) return state
  const code = state === "running" ? 32 : state === "broken" ? 31 : 2
  return `\u001b[${code}m${state}\u001b[0m`
}

export const mib = (megabytes: number): string =>
  megabytes >= 1024 && megabytes % 1024 === 0 ? `${megabytes / 1024}G` : `${megabytes}M`

/** `12.3K`-style sizes for listings. */
export const humanSize = (bytes: number): string => {
  const units = ["", "K", "M", "G", "T"]
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? String(bytes) : `${value >= 10 ? Math.round(value) : value.toFixed(1)}${units[unit]}`
}

/** A terminal's progress line: `[#####-----]  45%  150M / 328M`. */
export const progressBar = (done: number, total: number, percent: number, width = 30): string => {
  const filled = Math.round((Math.min(100, Math.max(0, percent)) * width) / 100)
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(percent).padStart(3)}%  ${humanSize(done)} / ${humanSize(total)}`
}
