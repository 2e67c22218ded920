import type { CommandResult } from "@stoat/wire"
import { StoatCommand } from "./base.js"

/** The commands whose result is a guest command's answer (svc, pkg install, user add). */
export abstract class GuestCommand extends StoatCommand {
  /** Prints the guest command's output as it wrote it (or the envelope), and exits 1 when it failed. */
  protected emitCommandResult(result: CommandResult): void {
    this.emit(result, () => {
      process.stdout.write(result.stdout)
      process.stderr.write(result.stderr)
    })
    if (!this.json && result.exit_code !== 0) this.exit(1)
  }
}

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
