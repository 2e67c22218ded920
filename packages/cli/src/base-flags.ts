import { Flags } from "@oclif/core"

/**
 * The flags every stoat command takes. A module of their own: a command that runs no catalog
 * operation (`stoat mcp --http …`, whose server bundle brings its own effect) loads no effect here.
 */
export const BASE_FLAGS = {
  quiet: Flags.boolean({
    char: "q",
    aliases: ["no-interactive"],
    description: "Suppress progress lines; results and errors still print."
  })
}
