import { catalog, hostOnlyFields, type Operation } from "@stoat/core"
import { DEFAULT_CALL_BUDGET_SECONDS, timeoutCapSeconds } from "../tools/budget.js"
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

/** How an agent should drive Stoat through these tools, for a server whose calls answer within `budgetSeconds`. */
export const guide = (budgetSeconds: number = DEFAULT_CALL_BUDGET_SECONDS): string => `# Using Stoat's MCP tools

Stoat manages local QEMU VMs. Every tool is one operation of Stoat's catalog (see
${CATALOG_URI}); the CLI runs the same operations.

## First VM
1. \`list_images\` shows the images; \`tiny\` boots to SSH in seconds and needs no download.
2. \`create\` {name, image: "tiny"} makes the definition; it does not start it.
3. \`start\` {vm}, then \`wait\` {vm} (until reachable, timeout_seconds default 300, max 600).
   sshd needs time to come up: a guest tool called before \`wait\` fails with cannot_reach.
4. Guest tools (\`exec\` …) need the VM's agent_access level (below).

## Long work
MCP clients give up on a request after 60 s unless progress arrives. So a call sent without a
progress token answers within ${budgetSeconds} s: its timeout_seconds (or default) is capped at
${timeoutCapSeconds(budgetSeconds)} s. What a call still working at ${budgetSeconds} s returns:
- \`exec\`: the output so far with timed_out=true (the command is stopped).
- \`wait\`, \`project_wait\`: code timeout, saying what the VM has not reached yet; call again.
- \`job_wait\`: the job's state (still running is not an error); call again.
- other commands (copies, recipes, checkpoints, project_up …): code still_running. The work goes
  on in the background as a host job whose id (h-…) is the error's subject: \`job_wait\` {vm,
  job_id} polls it and, once it has exited, returns exit_code 0 with the call's result as JSON in
  stdout_tail (or 1 with its error in stderr_tail); \`job_output\` reads the whole result,
  \`job_kill\` stops it, \`list_jobs\` shows it. Work on several VMs (project_up …) has no VM to
  poll through: \`list_vms\` and \`project_wait\` show how far it got. Host jobs live in this
  server process: they stop when it exits.
- other queries: code timeout; the query was stopped.
Send a progress token to let a call run to its own cap (timeout_seconds up to 600): progress
notifications then arrive every second, and a client that resets its timeout on progress keeps
waiting. For guest work longer than that, start it with \`exec_bg\` and poll \`job_wait\`.
Cancelling a call stops its work.
A client that supports MCP tasks may run the tools marked execution.taskSupport "optional"
(create, start, wait, exec, …) as tasks, which are not capped: poll tasks/get, fetch
tasks/result, stop with tasks/cancel.

## Access levels
Each VM's vm.toml holds agent_access, read on every call: none < observe < manage < exec,
each including the ones below. none still allows host-side status, lifecycle, snapshots,
logs, forwarding and recipe management. \`create\` defaults to manage. \`update\` can lower a
VM's level but never raise it; a person raises it with \`stoat update <vm> --agent-access …\`.
A refusal reads: vm "x" has agent_access = A; needs B (code access_denied).

## Deletions
\`destroy\`, \`restore\`, \`delete_snapshot\`, \`delete_checkpoint\` and \`prune\` with apply=true
need a confirmation. Pass confirm=<VM name> (for delete_checkpoint "<vm>@<checkpoint>", for
prune "prune") to give it in advance. Without it, a client that supports elicitation is asked
to type that word; any other client gets code confirmation_required, whose message names the
exact confirm value to pass. (A server started with --no-confirm skips the question.)

## Errors and limits
A failed call has isError=true, the human message first, and the wire ErrorInfo under
_meta["io.github.novusedge.stoat/error"] and as a second text block {"error":{...}}. Branch on
error.code, never on the message. Calls are rate limited per tool and for the whole server;
a refusal (rate_limited) says which and carries retry_after_ms, the wait before a retry.
`

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
