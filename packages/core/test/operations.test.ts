import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { JSONSchema } from "effect"
import { describe, expect, it } from "vitest"
import { catalog, DESTRUCTIVE, EXEC, hostOnlyFields, MUTATE, READ } from "../src/operations/index.js"

const CLASSES = [READ, MUTATE, DESTRUCTIVE, EXEC]
const COMMANDS = fileURLToPath(new URL("../../cli/src/commands/", import.meta.url))

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

  // `pull` is CLI-only (no MCP tool), so it keeps its own hints (idempotent, open world).
  it("gives every MCP tool one of the four annotation classes (reference §5), queries the read class", () => {
    for (const operation of catalog.filter((candidate) => candidate.expose.mcp)) {
      expect(CLASSES, operation.key).toContainEqual(operation.annotations)
      if (operation.kind === "query") expect(operation.annotations, operation.key).toEqual(READ)
    }
  })

  for (const operation of catalog) {
    describe(`${operation.key} (${operation.tool})`, () => {
      it("takes a closed object: JSON Schema type object without additional properties", () => {
        const schema = JSONSchema.make(operation.input) as Record<string, unknown>
        expect(schema["type"]).toBe("object")
        expect(schema["additionalProperties"]).toBe(false)
        for (const field of hostOnlyFields(operation.input)) expect(Object.keys((schema["properties"] ?? {}) as object)).toContain(field)
      })

      it("has an output JSON Schema of an object", () => {
        const schema = JSONSchema.make(operation.output) as Record<string, unknown>
        expect(schema["type"]).toBe("object")
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
