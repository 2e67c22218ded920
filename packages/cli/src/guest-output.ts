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
