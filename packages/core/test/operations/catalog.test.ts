import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { JSONSchema } from "effect"
import { describe, expect, it } from "vitest"
import { catalog, hostOnlyFields, type Operation } from "../../src/operations/index.js"
const COMMANDS = fileURLToPath(new URL("../../../cli/src/commands/", import.meta.url))

/** The oclif source file that serves a CLI command id ("snapshot ls" → snapshot/ls.ts or snapshot/ls/index.ts). */
const commandFile = (id: string): string | undefined => {
  const path = id.split(" ").join("/")
  return [`${COMMANDS}${path}.ts`, `${COMMANDS}${path}/index.ts`].find((file) => existsSync(file))
}

describe("the operation catalog is ready for every frontend", () => {
  it("has unique keys and unique tool names of the seed's shape", () => {
    const tools = catalog.map((operation) => operation.tool)
    for (const tool of tools) expect(tool).toMatch(/^[a-z][a-z0-9_]*$/)
    expect(new Set(tools).size).toBe(tools.length)
    const keys = catalog.map((operation) => operation.key)
    expect(new Set(keys).size).toBe(keys.length)
  })

  /**
   * The hints an operation earns from what it touches (issue 26 item 10): a query reads; acting in
   * a guest (commands, recipe scripts, files, guest data onto the host) is destructive and open
   * world; reaching the network is open world; deleting stored data is destructive.
   */
  const derivedHints = (operation: Operation) => {
    const touches = new Set(operation.touches ?? [])
    return {
      readOnlyHint: operation.kind === "query",
      destructiveHint: touches.has("guest") || touches.has("deletes"),
      openWorldHint: touches.has("guest") || touches.has("network")
    }
  }

  it("gives every operation the annotations that follow from what it touches, all four always", () => {
    for (const operation of catalog) {
      expect(Object.keys(operation.annotations).sort(), operation.key).toEqual([
        "destructiveHint",
        "idempotentHint",
        "openWorldHint",
        "readOnlyHint"
      ])
      expect(operation.annotations, operation.key).toMatchObject(derivedHints(operation))
      // A read repeats without effect; a change or a deletion does not (pull alone: it skips a downloaded image).
      if (operation.key !== "image.pull")
        expect(operation.annotations.idempotentHint, operation.key).toBe(operation.kind === "query")
    }
  })

  it("marks what runs guest code or reaches the network as such (project_apply, the remote recipe tools)", () => {
    const touchesOf = (tool: string) => catalog.find((operation) => operation.tool === tool)!.touches ?? []
    expect(touchesOf("project_apply")).toEqual(touchesOf("apply_recipes"))
    for (const tool of ["search_recipes", "add_recipe", "update_recipe", "lock_recipes", "sync_recipes", "pull"])
      expect(touchesOf(tool), tool).toContain("network")
    for (const tool of ["list_recipes", "remove_recipe", "plan_recipes", "read_file"])
      expect(touchesOf(tool), tool).toEqual([])
  })

  for (const operation of catalog) {
    describe(`${operation.key} (${operation.tool})`, () => {
      it("takes a closed object: JSON Schema type object without additional properties", () => {
        const schema = JSONSchema.make(operation.input)
        expect(schema).toMatchObject({ type: "object", additionalProperties: false })
        const properties = "properties" in schema ? Object.keys(schema.properties) : []
        for (const field of hostOnlyFields(operation.input)) expect(properties).toContain(field)
      })

      it("has an output JSON Schema of an object", () => {
        expect(JSONSchema.make(operation.output)).toMatchObject({ type: "object" })
      })

      const { cli } = operation.expose
      if (cli !== false) {
        it("is served by a CLI command", () => {
          expect(commandFile(cli), `no packages/cli/src/commands file for "stoat ${cli}"`).toBeDefined()
        })
      }
    })
  }
})
