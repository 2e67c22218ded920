import { existsSync, readFileSync, statSync } from "node:fs"
import { ToolkitError } from "./errors.js"

/** Replaces each token before a `--` by what `each` makes of it; `--` and all after it stay as they are. */
const eachOptionToken = (argv: readonly string[], each: (token: string, index: number) => string[]): string[] => {
  const end = argv.indexOf("--")
  const options = end === -1 ? argv : argv.slice(0, end)
  return [...options.flatMap((token, index) => each(token, index)), ...(end === -1 ? [] : argv.slice(end))]
}

/**
 * `--flag` with no explicit value means `--flag true` for our booleans, which otherwise take
 * `true|false` (the form tool calls use).
 */
export const normalizeBooleans = (argv: readonly string[], booleans: ReadonlySet<string>): string[] =>
  eachOptionToken(argv, (token, i) => {
    if (!token.startsWith("--") || token.includes("=") || !booleans.has(token.slice(2))) return [token]
    const next = argv[i + 1]?.toLowerCase()
    return next === "true" || next === "false" ? [token] : [token, "true"]
  })

/**
 * Marks a value given as `--name=value`. oclif takes a value that spells one of the command's
 * flags (`--string1=--ignore-case`) for a missing value; a marked value never does, and the
 * string options' parser takes the mark off again. NUL cannot occur in a real command line.
 */
export const EXPLICIT_VALUE_MARK = "\u0000"

/** The value itself: a marked value loses its mark. */
export const unmarkValue = (value: string): string => (value.startsWith(EXPLICIT_VALUE_MARK) ? value.slice(1) : value)

/** Marks every `--name=value` value of the given options (before any `--`); see EXPLICIT_VALUE_MARK. */
export const markExplicitValues = (argv: readonly string[], names: ReadonlySet<string>): string[] =>
  eachOptionToken(argv, (token) => {
    const eq = token.indexOf("=")
    return [
      token.startsWith("--") && eq !== -1 && names.has(token.slice(2, eq))
        ? `${token.slice(0, eq + 1)}${EXPLICIT_VALUE_MARK}${token.slice(eq + 1)}`
        : token
    ]
  })

/** True when `--name` or `--name=…` appears before any `--`. */
export const hasOption = (argv: readonly string[], name: string): boolean => {
  for (const token of argv) {
    if (token === "--") return false
    if (token === `--${name}` || token.startsWith(`--${name}=`)) return true
  }
  return false
}

/** Splits one response-file line into tokens: whitespace separates, double quotes group. */
const splitLine = (line: string): string[] => {
  const tokens: string[] = []
  let current = ""
  let quoted = false
  let started = false
  for (const ch of line) {
    if (ch === '"') {
      quoted = !quoted
      started = true
    } else if (!quoted && /\s/.test(ch)) {
      if (started) tokens.push(current)
      current = ""
      started = false
    } else {
      current += ch
      started = true
    }
  }
  if (started) tokens.push(current)
  return tokens
}

/**
 * Response files, as System.CommandLine does them on the original's command line: a token
 * `@path` is replaced by the tokens in that file (one or more per line, `#` lines are comments,
 * nested `@` tokens expand too). Only the command line does this; tool-call arguments are taken
 * literally and never pass through here.
 */
export const expandResponseFiles = (argv: readonly string[], depth = 0): string[] => {
  if (depth > 10) throw new ToolkitError("Response files are nested too deeply")
  return eachOptionToken(argv, (token) => {
    if (token.length <= 1 || !token.startsWith("@")) return [token]
    const path = token.slice(1)
    if (!existsSync(path) || !statSync(path).isFile()) throw new ToolkitError(`Response file not found '${path}'`)
    const tokens = readFileSync(path, "utf8")
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#"))
      .flatMap(splitLine)
    return expandResponseFiles(tokens, depth + 1)
  })
}
