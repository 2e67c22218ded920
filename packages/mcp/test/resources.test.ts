import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { catalog } from "@stoat/core"
import { dataOf, inProcess } from "./helpers.js"

type Harness = Awaited<ReturnType<typeof inProcess>>

describe("resources and prompts (seed 004, SPEC §2)", () => {
  let h: Harness
  beforeAll(async () => {
    h = await inProcess()
    dataOf(await h.client.callTool({ name: "create", arguments: { name: "web", image: "tiny" } }))
  })
  afterAll(async () => h?.close())

  it("lists the operation catalog and the guide, and the stoat://vm/{name} template", async () => {
    expect((await h.client.listResources()).resources.map((r) => r.uri)).toEqual([
      "stoat://operation-catalog",
      "stoat://guide"
    ])
    expect((await h.client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      "stoat://vm/{name}"
    ])
  })

  it("stoat://operation-catalog is generated from the catalog: every operation, its tool, CLI command and level", async () => {
    const read = await h.client.readResource({ uri: "stoat://operation-catalog" })
    const doc = JSON.parse((read.contents[0] as { text: string }).text) as {
      operations: Array<{ key: string; tool: string | null; access: string }>
    }
    expect(doc.operations.map((o) => o.key)).toEqual(catalog.map((o) => o.key))
    expect(doc.operations.find((o) => o.key === "guest.exec")).toMatchObject({ tool: "exec", access: "exec" })
    expect(doc.operations.find((o) => o.key === "image.pull")).toMatchObject({ tool: null })
  })

  it("stoat://guide tells an agent to wait after start and explains levels and errors", async () => {
    const text = ((await h.client.readResource({ uri: "stoat://guide" })).contents[0] as { text: string }).text
    expect(text).toMatch(/wait/)
    expect(text).toMatch(/none < observe < manage < exec/)
    expect(text).toContain("io.github.novusedge.stoat/error")
  })

  it("stoat://vm/{name} reads a VM's status; an unknown VM is an error naming it", async () => {
    const read = await h.client.readResource({ uri: "stoat://vm/web" })
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ name: "web", state: "stopped" })
    await expect(h.client.readResource({ uri: "stoat://vm/ghost" })).rejects.toThrow(/no VM "ghost"/)
    await expect(h.client.readResource({ uri: "stoat://elsewhere" })).rejects.toThrow(/no resource/)
  })

  it("sends protocol errors with their message once prefixed, never 'MCP error -32602: MCP error -32602:'", async () => {
    const messageOf = (promise: Promise<unknown>) =>
      promise.then(
        () => "",
        (error: Error) => error.message
      )
    expect(await messageOf(h.client.readResource({ uri: "stoat://elsewhere" }))).toMatch(
      /^MCP error -32602: no resource stoat:\/\/elsewhere;/
    )
    expect(await messageOf(h.client.getPrompt({ name: "nope" }))).toMatch(
      /^MCP error -32602: no prompt "nope"; prompts are /
    )
    // The SDK's own argument check of tools/call, too.
    const sdkCheck = await messageOf(
      h.client.request(
        { method: "tools/call", params: { name: "list_vms", arguments: "all" } } as never,
        CallToolResultSchema
      )
    )
    expect(sdkCheck).toMatch(/^MCP error -32602: invalid tools\/call request: params\.arguments: /)
    expect(sdkCheck).not.toMatch(/MCP error -?\d+: MCP error/)
  })

  it("offers the three prompts, which sequence existing tools only", async () => {
    const { prompts } = await h.client.listPrompts()
    expect(prompts.map((p) => p.name)).toEqual(["stoat-first-vm", "stoat-debug-vm", "stoat-project-up"])
    const toolNames = new Set((await h.client.listTools()).tools.map((t) => t.name))
    for (const prompt of prompts) {
      const args = prompt.name === "stoat-debug-vm" ? { vm: "web" } : {}
      const got = await h.client.getPrompt({ name: prompt.name, arguments: args })
      const text = (got.messages[0]!.content as { text: string }).text
      const named = [...text.matchAll(/(?:^|\s)(\w+) \{/g)].map((m) => m[1]!)
      for (const name of named) expect(toolNames, `${prompt.name} names ${name}`).toContain(name)
    }
    await expect(h.client.getPrompt({ name: "stoat-debug-vm", arguments: {} })).rejects.toThrow(/needs the argument vm/)
  })

  it("completes VM names for the stoat://vm/{name} template and the prompts' vm argument", async () => {
    dataOf(await h.client.callTool({ name: "create", arguments: { name: "worker", image: "tiny" } }))
    const byTemplate = await h.client.complete({
      ref: { type: "ref/resource", uri: "stoat://vm/{name}" },
      argument: { name: "name", value: "w" }
    })
    expect(byTemplate.completion.values).toEqual(["web", "worker"])
    const byPrompt = await h.client.complete({
      ref: { type: "ref/prompt", name: "stoat-debug-vm" },
      argument: { name: "vm", value: "wo" }
    })
    expect(byPrompt.completion.values).toEqual(["worker"])
    await h.client.setLoggingLevel("warning")
  })
})
