import { Errors } from "@oclif/core"

/** The not-found plugin's exit status for "not a stoat command". */
const NOT_A_COMMAND = 127
/**
 * oclif's exit status for a CLIError that names none: every error of its parser (unknown flag,
 * missing argument, bad choice) and every flag value a flag's `parse` refused. Stoat's own flags
 * refuse with a CLIError too (see flags.ts), so all of them are usage errors.
 */
const USAGE = 2

/** How main answers what oclif's `run` threw. */
export type OclifFailure =
  /** A command ended with `this.exit(code)`: it has said everything already. */
  | { readonly kind: "exit"; readonly code: number }
  | { readonly kind: "unknown-command" }
  | { readonly kind: "usage"; readonly message: string }
  | { readonly kind: "internal"; readonly message: string; readonly code: number }

/**
 * oclif's parser message as one line that names the flag: it prefixes "Parsing --ram \n\t" to a
 * flag's own message and appends "See more help with --help" (main points at help itself). Our
 * list flags take one value each, so its note that they swallow arguments is dropped.
 */
const usageText = (message: string): string =>
  message
    .replace(/\n\s*See more help with --help$/m, "")
    .replace(/^Parsing (--[\w-]+)\s*\n\s*/, "$1: ")
    .replace(/\n+Note: --[\w-]+ allows multiple values[\s\S]*$/, "")
    .trim()

/** Tells oclif's failures apart by their class and exit status, never by their wording. */
export const oclifFailure = (error: unknown): OclifFailure => {
  if (error instanceof Errors.ExitError) return { kind: "exit", code: error.oclif.exit ?? 1 }
  if (error instanceof Errors.CLIError && error.oclif.exit === NOT_A_COMMAND) return { kind: "unknown-command" }
  if (error instanceof Errors.CLIError && error.oclif.exit === USAGE)
    return { kind: "usage", message: usageText(error.message) }
  const message = error instanceof Error ? error.message : String(error)
  return { kind: "internal", message, code: error instanceof Errors.CLIError ? (error.oclif.exit ?? 1) : 1 }
}
