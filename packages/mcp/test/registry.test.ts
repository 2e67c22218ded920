import { describe, expect, it } from "vitest"
import { catalog, hostOnlyFields } from "@stoat/core"
import { buildRegistry, catalogDocument } from "../src/index.js"

const HINTS = {
  read: { readOnlyHint: true, destructiveHint: false, openWorldHint: false },
  mutate: { readOnlyHint: false, destructiveHint: false, openWorldHint: false },
  destructive: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
  exec: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
  read_network: { readOnlyHint: true, destructiveHint: false, openWorldHint: true },
  mutate_network: { readOnlyHint: false, destructiveHint: false, openWorldHint: true }
}

/**
 * The annotation class of each seed tool (reference/stoat-original.md §5), corrected where issue
 * 26 found a class that hid what a tool does: project_apply runs guest scripts (exec, like
 * apply_recipes); search_recipes, add_recipe and update_recipe reach the network (open world).
 */
const CLASS: Record<string, keyof typeof HINTS> = {
  list_vms: "read",
  vm_status: "read",
  list_images: "read",
  list_guests: "read",
  guest_info: "read",
  logs: "read",
  doctor: "read",
  capabilities: "read",
  list_snapshots: "read",
  create: "mutate",
  start: "mutate",
  stop: "mutate",
  update: "mutate",
  clone: "mutate",
  snapshot: "mutate",
  forward: "mutate",
  wait: "mutate",
  destroy: "destructive",
  restore: "destructive",
  delete_snapshot: "destructive",
  prune: "destructive",
  exec: "exec",
  read_file: "read",
  list_dir: "read",
  stat: "read",
  ps: "read",
  svc_status: "read",
  tail_log: "read",
  write_file: "exec",
  pkg_install: "exec",
  svc: "exec",
  useradd: "exec",
  exec_bg: "exec",
  job_kill: "exec",
  job_status: "read",
  job_wait: "read",
  job_output: "read",
  list_jobs: "read",
  copy_to: "exec",
  copy_from: "exec",
  list_recipes: "read",
  check_recipes: "read",
  plan_recipes: "read",
  recipe_schema: "read",
  apply_recipes: "exec",
  project_status: "read",
  project_up: "mutate",
  project_down: "mutate",
  project_apply: "exec",
  project_wait: "mutate",
  search_recipes: "read_network",
  add_recipe: "mutate_network",
  update_recipe: "mutate_network",
  remove_recipe: "mutate"
}

describe("the tool registry is the catalog", () => {
  const tools = [...buildRegistry().values()].map((entry) => entry.definition)

  it("has one tool per exposed catalog entry, names unique and snake_case", () => {
    expect(tools.map((t) => t.name)).toEqual(catalog.filter((op) => op.expose.mcp).map((op) => op.tool))
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length)
    for (const tool of tools) expect(tool.name).toMatch(/^[a-z][a-z0-9_]*$/)
  })

  it("leaves the fields annotated host-only out of each tool's input schema", () => {
    // The CLI-only knobs of reference §5: host paths, passwords, overrides.
    expect(hostOnlyFields(catalog.find((op) => op.tool === "update")!.input)).toEqual([
      "share",
      "shares",
      "display",
      "installed",
      "name",
      "os",
      "backend",
      "mode"
    ])
    for (const op of catalog.filter((candidate) => candidate.expose.mcp)) {
      const tool = tools.find((t) => t.name === op.tool)!
      const properties = Object.keys(tool.inputSchema["properties"] as object)
      for (const field of hostOnlyFields(op.input)) {
        expect(properties, `${op.tool}.${field}`).not.toContain(field)
        expect(tool.inputSchema["required"] ?? [], `${op.tool}.${field}`).not.toContain(field)
      }
    }
  })

  it("gives each seed tool the annotations of its class", () => {
    for (const [name, klass] of Object.entries(CLASS)) {
      const tool = tools.find((t) => t.name === name)
      expect(tool, name).toBeDefined()
      expect(tool!.annotations, name).toMatchObject(HINTS[klass])
    }
  })

  it("keeps recipe scaffolding, the host recipe list and refresh out of MCP, and start cannot apply recipes", () => {
    for (const absent of ["recipe_new", "recipe_list", "refresh_recipes", "lock_recipes", "sync_recipes"])
      expect(tools.map((t) => t.name)).not.toContain(absent)
    expect(Object.keys(tools.find((t) => t.name === "start")!.inputSchema["properties"] as object)).not.toContain(
      "apply"
    )
  })

  it("offers confirm exactly on the deleting tools", () => {
    const confirmable = tools.filter((t) => "confirm" in (t.inputSchema["properties"] as object)).map((t) => t.name)
    expect(confirmable.sort()).toEqual(["delete_checkpoint", "delete_snapshot", "destroy", "prune", "restore"])
  })

  it("renders inputs without arguments as a closed empty object", () => {
    for (const name of ["list_vms", "list_guests", "doctor", "version", "list_images"]) {
      expect(tools.find((t) => t.name === name)!.inputSchema).toEqual({
        type: "object",
        properties: {},
        additionalProperties: false
      })
    }
  })

  it("lists compact schemas: no generated descriptions, no references, results as objects", () => {
    for (const tool of tools) {
      const input = JSON.stringify(tool.inputSchema)
      expect(input, tool.name).not.toMatch(/"\$ref"|"\$defs"|"title"|"description":"an? /)
      expect(tool.outputSchema, tool.name).toEqual({ type: "object" })
    }
  })

  it("keeps every result's full schema in the operation-catalog resource (the recursive Json type named once)", () => {
    const document = catalogDocument()
    for (const name of ["list_guests", "guest_info"]) {
      const entry = document.operations.find((op) => op.tool === name)!
      expect((entry.output_schema as { $defs?: Record<string, unknown> }).$defs?.["Json"], name).toBeDefined()
    }
    expect(document.operations.find((op) => op.tool === "exec")!.output_schema).toMatchObject({
      properties: { exit_code: { type: "integer" } },
      required: ["exit_code"]
    })
  })
})
