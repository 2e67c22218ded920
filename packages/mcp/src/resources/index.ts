import { catalog, hostOnlyFields, type Operation } from "@stoat/core"
import { fullOutputSchema } from "../tools/json-schema.js"

export const CATALOG_URI = "stoat://operation-catalog"
export const GUIDE_URI = "stoat://guide"
export const VM_TEMPLATE = "stoat://vm/{name}"

/** Every catalog operation as data: the same table the tools, the CLI and the docs come from. */
export const catalogDocument = (operations: ReadonlyArray<Operation> = catalog) => ({
  operations: operations.map((operation) => ({
    key: operation.key,
    tool: operation.expose.mcp ? operation.tool : null,
    cli: operation.expose.cli === false ? null : `stoat ${operation.expose.cli}`,
    title: operation.title,
    description: operation.description,
    kind: operation.kind,
    access: typeof operation.access === "function" ? "depends on input" : (operation.access ?? "none"),
    annotations: operation.annotations,
    host_only_fields: hostOnlyFields(operation.input),
    // tools/list carries only each result's field names; the full DTO is here.
    output_schema: fullOutputSchema(operation.output)
  }))
})

/** How an agent should drive Stoat through these tools. */
export const GUIDE = `# Using Stoat's MCP tools

Stoat manages local QEMU VMs. Every tool is one operation of Stoat's catalog (see
${CATALOG_URI}); the CLI runs the same operations.

## First VM
1. \`list_images\` shows the images; \`tiny\` boots to SSH in seconds and needs no download.
2. \`create\` {name, image: "tiny"} makes the definition; it does not start it.
3. \`start\` {vm}, then \`wait\` {vm} (until reachable, timeout_seconds default 300, max 600).
   sshd needs time to come up: a guest tool called before \`wait\` fails with cannot_reach.
4. Guest tools (\`exec\` …) need the VM's agent_access level (below).

## Long work
Calls are bounded by timeout_seconds so they return before a client's own timeout. Send a
progress token to receive progress notifications; cancelling a call stops its work.
\`exec\` stops after timeout_seconds (default 60, max 600) and returns partial output with
timed_out=true.
A client that supports MCP tasks may run the tools marked execution.taskSupport "optional"
(create, start, wait, exec, …) as tasks: poll tasks/get, fetch tasks/result, stop with
tasks/cancel.

## Access levels
Each VM's vm.toml holds agent_access, read on every call: none < observe < manage < exec,
each including the ones below. none still allows host-side status, lifecycle, snapshots,
logs, forwarding and recipe management. \`create\` defaults to manage. \`update\` can lower a
VM's level but never raise it; a person raises it with \`stoat update <vm> --agent-access …\`.
A refusal reads: vm "x" has agent_access = A; needs B (code access_denied).

## Deletions
\`destroy\`, \`restore\`, \`delete_snapshot\` and \`prune\` with apply=true ask for confirmation
through elicitation when your client supports it; pass confirm=<VM name> (or "prune") to
answer in advance.

## Errors and limits
A failed call has isError=true, the human message first, and the wire ErrorInfo under
_meta["io.github.novusedge.stoat/error"] and as a second text block {"error":{...}}. Branch on
error.code, never on the message. Calls are rate limited per tool and for the whole server;
a refusal (rate_limited) says which and when to retry.
`

export const vmUri = (name: string): string => `stoat://vm/${encodeURIComponent(name)}`

/** The VM name of a stoat://vm/{name} URI, or undefined. */
export const vmNameOf = (uri: string): string | undefined => {
  const match = /^stoat:\/\/vm\/([^/]+)$/.exec(uri)
  if (!match) return undefined
  try {
    return decodeURIComponent(match[1]!)
  } catch {
    return undefined
  }
}
