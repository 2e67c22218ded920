/**
 * Takes `--json` out of argv wherever it stands, so usage errors can answer in JSON too.
 * It stays in place after `exec <vm>` (it belongs to the guest command) and after `--`.
 */
export const extractJsonFlag = (argv: ReadonlyArray<string>): { json: boolean; rest: string[] } => {
  const rest: string[] = []
  let json = false
  let passthrough = false
  let positionals = 0
  const isExec = argv.find((word) => !word.startsWith("-")) === "exec"
  for (const word of argv) {
    if (passthrough) {
      rest.push(word)
      continue
    }
    if (word === "--") {
      passthrough = true
      rest.push(word)
      continue
    }
    if (word === "--json") {
      json = true
      continue
    }
    rest.push(word)
    if (!word.startsWith("-")) {
      positionals++
      // `exec <vm> <cmd...>`: from the guest command on, words belong to the guest.
      if (isExec && positionals === 2) passthrough = true
    }
  }
  return { json, rest }
}

/** The reported `cmd` of the envelope: the command id, with subcommand groups reported by their group name. */
export const commandName = (argv: ReadonlyArray<string>): string => {
  const first = argv.find((word) => !word.startsWith("-")) ?? ""
  if (first === "new") return "create"
  if (first === "provision") return "apply"
  return first
}
