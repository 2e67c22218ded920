import { operationByKey, personWords, type HintStep, type HintWords } from "@stoat/core"
import { manifestCommands } from "./manifest.js"
import { shellWord } from "@stoat/core/ssh"

/** One step as the command a person types: the operation's command, its positional args in order, the rest as flags. */
const commandFor = (step: HintStep): string => {
  const id = operationByKey(step.operation)?.expose.cli
  // No command serves it: the catalog's own name is the best there is.
  if (!id) return step.operation
  const positional = Object.keys(manifestCommands()[id.replaceAll(" ", ":")]?.args ?? {})
  const words = ["stoat", ...id.split(" ")]
  for (const name of positional) if (name in step.input) words.push(shellWord(String(step.input[name])))
  for (const [key, value] of Object.entries(step.input)) {
    if (positional.includes(key) || value === false) continue
    const flag = `--${key.replaceAll("_", "-")}`
    words.push(...(value === true ? [flag] : [flag, shellWord(String(value))]))
  }
  return words.join(" ")
}

/** A failure's hint in the CLI's words: `start it with stoat up web`, `see stoat ls`. */
export const cliWords: HintWords = personWords(commandFor)
