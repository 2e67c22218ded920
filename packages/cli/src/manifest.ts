import { createRequire } from "node:module"

/** A command as oclif's manifest describes it: its positional args and flags by name, in order. */
export interface ManifestCommand {
  readonly aliases?: ReadonlyArray<string>
  readonly hidden?: boolean
  readonly args: Readonly<Record<string, unknown>>
  readonly flags: Readonly<Record<string, unknown>>
}

let loaded: Readonly<Record<string, ManifestCommand>> | undefined

/** Every command by its oclif id (`file:read`), from the manifest oclif reads too; read once, when first needed. */
export const manifestCommands = (): Readonly<Record<string, ManifestCommand>> =>
  (loaded ??= (
    createRequire(import.meta.url)("../oclif.manifest.json") as { commands: Record<string, ManifestCommand> }
  ).commands)
