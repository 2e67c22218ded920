import { readFileSync } from "node:fs"
import { join } from "node:path"
import { CallToolResultSchema, CreateTaskResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dataOf, errorOf, inProcess, unreachableVm } from "./helpers.js"

type Session = Awaited<ReturnType<typeof inProcess>>

/** tools/call augmented with `task` (MCP 2025-11-25): the server answers with a task to poll. */
const startTask = (session: Session, name: string, args: Record<string, unknown>) =>
  session.client.request(
    { method: "tools/call", params: { name, arguments: args, task: { ttl: 60_000 } } },
    CreateTaskResultSchema
  )

const settle = async (session: Session, taskId: string) => {
  for (let i = 0; i < 200; i++) {
    const task = await session.client.experimental.tasks.getTask(taskId)
    if (task.status !== "working") return task
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`task ${taskId} still working`)
}

describe("long tools run as MCP tasks for a client that asks (spec 2025-11-25)", () => {
  let session: Session
  beforeAll(async () => {
    session = await inProcess()
  })
  afterAll(async () => session?.close())

  it("declares the tasks capability and marks only the long-running tools as task-capable", async () => {
    expect(session.client.getServerCapabilities()?.tasks).toMatchObject({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } }
    })
    const { tools } = await session.client.listTools()
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]))
    expect(support).toMatchObject({ create: "optional", start: "optional", wait: "optional", exec: "optional" })
    expect(support["list_vms"]).toBeUndefined()
    expect(support["destroy"]).toBeUndefined()
  })

  it("runs create as a task: working, then completed with the tool's own result", async () => {
    const { task } = await startTask(session, "create", { name: "t1", image: "tiny" })
    expect(task.status).toBe("working")
    expect(task.pollInterval).toBeGreaterThan(0)
    expect((await settle(session, task.taskId)).status).toBe("completed")
    const result = await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)
    expect(dataOf(result)).toMatchObject({ name: "t1", state: "stopped" })
    expect((await session.client.experimental.tasks.listTasks()).tasks.map((listed) => listed.taskId)).toContain(
      task.taskId
    )
  })

  it("a tool that fails ends its task failed, the result carrying the seed's error envelope", async () => {
    await unreachableVm(session.client, session.guest, "t2")
    const { task } = await startTask(session, "wait", { vm: "t2", timeout_seconds: 1 })
    expect((await settle(session, task.taskId)).status).toBe("failed")
    expect(errorOf(await session.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema)).code).toBe(
      "timeout"
    )
  })

  it("tasks/cancel interrupts the operation, which is audited as canceled", async () => {
    await unreachableVm(session.client, session.guest, "t3")
    const { task } = await startTask(session, "wait", { vm: "t3", timeout_seconds: 600 })
    await session.client.experimental.tasks.cancelTask(task.taskId)
    expect((await session.client.experimental.tasks.getTask(task.taskId)).status).toBe("cancelled")
    const log = join(session.root, "logs", "stoat.log")
    for (let i = 0; i < 100 && !/vm=t3 .*outcome=error:canceled/.test(readFileSync(log, "utf8")); i++)
      await new Promise((r) => setTimeout(r, 50))
    expect(readFileSync(log, "utf8")).toMatch(/tool=wait entrypoint=mcp .* vm=t3 .*outcome=error:canceled/)
  })

  it("refuses a task for a tool that does not run as one, with Method not found", async () => {
    const refused = await startTask(session, "list_vms", {}).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(refused).toBeInstanceOf(McpError)
    expect((refused as McpError).code).toBe(ErrorCode.MethodNotFound)
    // The plain call still works.
    dataOf(await session.client.callTool({ name: "list_vms", arguments: {} }))
  })
})
