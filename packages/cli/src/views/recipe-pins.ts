import { Flags } from "@oclif/core"
import type { lockRecipes } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { table } from "../render.js"

/** The pins of a scope as `recipe lock|sync|update` print them. */
export const pinTable = (
  pins: ReadonlyArray<{ name: string; scope: string; ref: string; commit: string; source: string }>
) =>
  table(
    ["NAME", "SCOPE", "REF", "COMMIT", "SOURCE"],
    pins.map((pin) => [pin.name, pin.scope, pin.ref, pin.commit.slice(0, 7), pin.source])
  )

/** `recipe lock` and `recipe sync`: one operation over the project's (or with --global the data root's) pins. */
export const pinsCommand = (operation: typeof lockRecipes, summary: string) =>
  class extends StoatCommand {
    static override summary = summary
    static override description = operation.description
    static override flags = {
      global: Flags.boolean({ description: "the global lock (<root>/stoat.lock) even inside a project" })
    }

    async run(): Promise<void> {
      const { flags } = await this.parse(
        this.constructor as typeof StoatCommand & { flags: { global: ReturnType<typeof Flags.boolean> } }
      )
      const result = await this.call(operation, flags.global ? { global: true } : {})
      this.emit(result, () => this.line(pinTable(result.recipes)))
    }
  }
