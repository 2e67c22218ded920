import { Command, type Interfaces } from "@oclif/core"
import { flagsOf, withConfiguredDefaults, type FlagMap } from "./defaults.js"
import { ToolkitError } from "./errors.js"
import { processIO, type CommandIO } from "./io.js"
import { parserArgv } from "./options.js"

/** How a command behaves, for MCP tool annotations. */
export type ToolKind = "read" | "write" | "delete" | "network"

/**
 * Base of every toolkit command. A command writes only through `this.io` (never `this.log` or
 * process streams) and reports failures by throwing (`this.fail`), so the same instance code
 * runs on the command line and, captured, inside a concurrent tool call.
 */
export abstract class ToolkitCommand extends Command {
  /** MCP annotations: pure commands are read-only, deletes destructive, network commands open-world. */
  static toolKind: ToolKind = "read"

  /** Injected by the runner before `run()`. */
  io: CommandIO = processIO()
  /** The command id (`interpreters:brainfuck`), set by the runner. */
  commandId = ""

  /** Parses the arguments with configured defaults applied, exactly as the CLI does. */
  protected async options<
    F extends Interfaces.OutputFlags<any>,
    B extends Interfaces.OutputFlags<any>,
    A extends Interfaces.OutputArgs<any>
  >(input: Interfaces.Input<F, B, A>): Promise<Interfaces.ParserOutput<F, B, A>> {
    const flags = flagsOf(input as { flags?: unknown; baseFlags?: unknown })
    const argv = parserArgv(this.argv, flags)
    const withDefaults = await withConfiguredDefaults(this.config, this.io, this.commandId, flags as FlagMap, argv)
    return this.parse(
      { ...input, flags: withDefaults as unknown as Interfaces.FlagInput<F>, baseFlags: {} as Interfaces.FlagInput<B> },
      argv
    )
  }

  protected fail(message: string): never {
    throw new ToolkitError(message)
  }

  protected line(text = ""): void {
    this.io.out(`${text}\n`)
  }
}
