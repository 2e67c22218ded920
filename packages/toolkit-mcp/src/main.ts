import { fileURLToPath } from "node:url"
import { expandResponseFiles } from "./runtime/argv.js"
import { errorMessage } from "./runtime/errors.js"
import { TOOLKIT_VERSION } from "./version.js"

const finish = async (code: number): Promise<never> => {
  // Let buffered output reach a pipe before exiting.
  await new Promise<void>((resolve) => process.stdout.write("", () => resolve()))
  process.exit(code)
}

const wantsHelp = (argv: readonly string[]): boolean => {
  for (const token of argv) {
    if (token === "--") return false
    if (token === "--help" || token === "-h") return true
  }
  return argv.length === 0 || argv[0] === "help"
}

/**
 * The toolkit's entry point. Commands run through the same runner that tool calls use
 * (runtime/run.ts); oclif is used for its parser, manifest and help.
 */
export const main = async (rawArgv: string[]): Promise<void> => {
  if (rawArgv[0] === "-v" || rawArgv[0] === "--version") {
    process.stdout.write(`toolkit ${TOOLKIT_VERSION}\n`)
    return
  }
  let argv: string[]
  try {
    // The command line keeps System.CommandLine's @response-file expansion; tool calls do not.
    argv = expandResponseFiles(rawArgv)
  } catch (error) {
    process.stdout.write(`Error: ${errorMessage(error)}\n`)
    return finish(1)
  }
  // Loaded after the --version shortcut: oclif and the runtime are most of the start-up time.
  const [{ Config, run }, { processIO }, { runCommand }, { loadCommand }] = await Promise.all([
    import("@oclif/core"),
    import("./runtime/io.js"),
    import("./runtime/run.js"),
    import("./runtime/tree.js")
  ])
  const config = await Config.load(fileURLToPath(import.meta.url))
  if (wantsHelp(argv)) {
    await run(argv, config)
    return
  }
  // Longest run of leading words that names a command: `mcp save text-tools` → mcp:save + [text-tools].
  let words = 0
  while (words < argv.length && !argv[words]!.startsWith("-")) words++
  for (let n = words; n > 0; n--) {
    const id = argv.slice(0, n).join(":")
    if (!config.findCommand(id)) continue
    const cls = await loadCommand(config, id)
    const code = await runCommand(cls, id, argv.slice(n), processIO(), config)
    return finish(code)
  }
  if (words > 0 && config.findTopic(argv.slice(0, words).join(":"))) {
    await run([...argv.slice(0, words), "--help"], config)
    return
  }
  process.stdout.write(
    `Error: unknown command '${argv.slice(0, Math.max(1, words)).join(" ")}'; see 'toolkit --help'\n`
  )
  return finish(1)
}
