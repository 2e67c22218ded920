import { hostOnlyFields, operationByKey, type HintStep, type HintWords } from "@stoat/core"

const argsOf = (step: HintStep): string => {
  const args = Object.entries(step.input).map(([key, value]) => `${key}=${JSON.stringify(value)}`)
  return args.length === 0 ? "" : ` with ${args.join(", ")}`
}

/**
 * The tool that does a step for an agent, or a person's CLI command where no tool does (a
 * download, a host-only field): `list_vms`, `start with vm="web"`, `stoat pull with id="x"`.
 */
const toolFor = (step: HintStep): { readonly tool: string; readonly person: boolean } => {
  const operation = operationByKey(step.operation)
  if (operation === undefined) return { tool: step.operation, person: false }
  const hostOnly = hostOnlyFields(operation.input).some((field) => field in step.input)
  if (operation.expose.mcp && !hostOnly) return { tool: operation.tool, person: false }
  return { tool: operation.expose.cli ? `stoat ${operation.expose.cli}` : operation.key, person: true }
}

const callOf = (step: HintStep, first: boolean): string => {
  const { tool, person } = toolFor(step)
  return person
    ? `ask a person to run ${tool}${first ? " first" : ""}${argsOf(step)}`
    : `call ${tool}${first ? " first" : ""}${argsOf(step)}`
}

/** A failure's hint in the MCP server's words: `see list_vms`, `start it: call start with vm="web"`, `call wait first with vm="web"`. */
export const mcpWords: HintWords = (hint) => {
  if (hint.advice === undefined)
    return `see ${hint.steps.map((step) => `${toolFor(step).tool}${argsOf(step)}`).join(", ")}`
  const calls = hint.steps.map((step, index) => callOf(step, hint.first === true && index === 0)).join(", then ")
  // A call to make first says what it is for by its name: `call wait first`, `call stop first`.
  return hint.first ? calls : `${hint.advice}: ${calls}`
}
