import { dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { Config, Parser } from "@oclif/core"
import fc from "fast-check"
import { beforeAll, describe, expect, it } from "vitest"
import { resultText } from "../src/mcp/result.js"
import { buildTool, toArgv, type JsonSchema, type ToolEntry } from "../src/mcp/tools.js"
import { parserArgv } from "../src/runtime/options.js"
import { commandIds, isNeverExposed } from "../src/runtime/tree.js"

/**
 * In-process properties of the tool layer: arguments that fit a tool's schema turn into tokens
 * that the command's own oclif flags parse back to the same values; anything else is refused
 * with the documented text. Uses the built manifest (run `pnpm build` first).
 */

let config: Config
let tools: ToolEntry[]

beforeAll(async () => {
  config = await Config.load(resolve(dirname(fileURLToPath(import.meta.url)), ".."))
  tools = await Promise.all(
    commandIds(config)
      .filter((id) => !isNeverExposed(id))
      .map((id) => buildTool(config, id))
  )
})

/** Values that look like options of the tool, or carry the explicit-value mark: still plain values. */
const trickyText = (tool: ToolEntry): fc.Arbitrary<string> =>
  fc.constantFrom(
    ...Object.keys(tool.flags).flatMap((name) => [`--${name}`, `--${name}=x`, `--no-${name}`]),
    "--",
    "-",
    "-h",
    "\u0000",
    "\u0000--help",
    "\u0000\u0000x"
  )

const valueFor = (schema: JsonSchema, tool: ToolEntry): fc.Arbitrary<unknown> => {
  if (Array.isArray(schema["enum"])) return fc.constantFrom(...(schema["enum"] as string[]))
  switch (schema["type"]) {
    case "integer":
      return fc.integer({
        min: (schema["minimum"] as number | undefined) ?? -1_000_000,
        max: (schema["maximum"] as number | undefined) ?? 1_000_000
      })
    case "number":
      return fc.double({ noNaN: true, noDefaultInfinity: true })
    case "boolean":
      return fc.boolean()
    default:
      // Any text, including "-", "--x", "@file", spaces and other options' names: all must arrive literally.
      return fc.oneof(fc.string({ unit: "grapheme", maxLength: 20 }), trickyText(tool))
  }
}

describe("tool arguments", () => {
  it("every exposable tool has a closed object schema and a name of its path", () => {
    expect(tools.length).toBe(10)
    for (const tool of tools) {
      expect(tool.name).toBe(tool.id.replaceAll(":", "_"))
      expect(tool.definition.inputSchema.type).toBe("object")
      expect(tool.definition.inputSchema.additionalProperties).toBe(false)
    }
  })

  it("valid arguments parse back to the same values through the command's own flags", async () => {
    for (const tool of tools) {
      const properties = tool.definition.inputSchema.properties
      if (Object.keys(properties).length === 0) continue
      const args = fc.record(
        Object.fromEntries(Object.entries(properties).map(([name, schema]) => [name, valueFor(schema, tool)])),
        { requiredKeys: [] }
      )
      await fc.assert(
        fc.asyncProperty(args, async (input) => {
          const out = toArgv(tool, input)
          if ("error" in out) throw new Error(out.error)
          const argv = parserArgv(out.argv, tool.flags)
          // Required and mutually exclusive options are the command's rules, not the tokens'.
          const relaxed = Object.fromEntries(
            Object.entries(tool.flags).map(([name, def]) => [name, { ...def, required: false, exclusive: [] }])
          )
          const parsed = await Parser.parse(argv, {
            flags: relaxed as never,
            args: {},
            strict: true,
            context: undefined as never
          })
          for (const [name, value] of Object.entries(input))
            expect((parsed.flags as Record<string, unknown>)[name]).toEqual(value)
        }),
        { numRuns: 60 }
      )
    }
  })

  it("refuses unknown properties and values of the wrong type with the documented text", () => {
    const brainfuck = tools.find((t) => t.name === "interpreters_brainfuck")!
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((k) => k !== "file"),
        fc.jsonValue(),
        (key, value) => {
          expect(toArgv(brainfuck, { [key]: value })).toEqual({
            error: `Unknown argument '${key}' for tool interpreters_brainfuck.`
          })
        }
      )
    )
    fc.assert(
      fc.property(
        fc.jsonValue().filter((v) => typeof v !== "string"),
        (value) => {
          expect(toArgv(brainfuck, { file: value })).toEqual({
            error: "Argument 'file' for tool interpreters_brainfuck must be a string."
          })
        }
      )
    )
  })

  it("refuses __proto__ as an argument name and arguments that are not an object", () => {
    const brainfuck = tools.find((t) => t.name === "interpreters_brainfuck")!
    expect(toArgv(brainfuck, JSON.parse('{"file": "x.bf", "__proto__": {"file": "y"}}'))).toEqual({
      error: "Unknown argument '__proto__' for tool interpreters_brainfuck."
    })
    for (const args of [null, [], ["file", "x"], "file=x", 3, true])
      expect(toArgv(brainfuck, args)).toEqual({ error: "Arguments for tool interpreters_brainfuck must be an object." })
    expect(toArgv(brainfuck, undefined)).toEqual({ argv: [] })
  })

  it("lays out results as stdout, stderr section, exit code line", () => {
    expect(resultText("", "", 0)).toBe("(no output)")
    expect(resultText("", "", 3)).toBe("(no output)\nexit code: 3")
    expect(resultText("out\n", "", 0)).toBe("out\n")
    expect(resultText("out", "err\n", 2)).toBe("out\nstderr:\nerr\nexit code: 2")
    expect(resultText("", "err", 0)).toBe("stderr:\nerr")
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.integer({ min: 0, max: 255 }), (out, err, code) => {
        const text = resultText(out, err, code)
        if (out !== "") expect(text.startsWith(out)).toBe(true)
        if (err !== "") expect(text).toContain(`stderr:\n${err}`)
        if (code !== 0) expect(text.endsWith(`exit code: ${code}`)).toBe(true)
        if (out === "" && err === "") expect(text.startsWith("(no output)")).toBe(true)
      })
    )
  })
})
