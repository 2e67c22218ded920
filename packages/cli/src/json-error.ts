import { encodeLine, resultError } from "@stoat/wire"

/** The one envelope of a command that failed before oclif ran it (or inside oclif's parser). */
export const writeJsonError = (cmd: string, code: "usage" | "internal", message: string): void => {
  process.stdout.write(encodeLine(resultError(cmd, { code, message })))
}
