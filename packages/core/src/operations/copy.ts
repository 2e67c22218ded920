import { Effect, Schema } from "effect"
import { CopyResult, McpCopyResult } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { copyFromGuest, copyToGuest } from "../guest/copy.js"
import { loadVm, requireRunning, sshTarget } from "../vm/records.js"
import { VmName } from "./inputs.js"
import { defineOperation, EXEC, hostOnly } from "./operation.js"

const CopyInput = Schema.Struct({
  vm: VmName,
  local: Schema.String.pipe(
    Schema.pattern(/^[^\0]+$/, { message: () => "host paths are non-empty and contain no NUL" }),
    Schema.maxLength(4096)
  ).annotations({ description: "Host file inside the VM's shared folder (relative: to that folder)" }),
  remote: Schema.String.pipe(
    Schema.pattern(/^\/[^\0]*$/, { message: () => "guest paths are absolute and contain no NUL" }),
    Schema.maxLength(4096)
  ).annotations({ description: "Absolute guest path" }),
  /** CLI only: a person at the terminal may copy any host file they can read or write (original §2.2, §5). */
  unconfined: hostOnly(Schema.optional(Schema.Boolean))
})
type CopyInput = typeof CopyInput.Type

const copy = (input: CopyInput, toRemote: boolean) =>
  Effect.gen(function* () {
    const record = yield* loadVm(input.vm)
    yield* requireRunning(record)
    const root = yield* DataRoot
    const request = {
      local: input.local,
      remote: input.remote,
      shared: input.unconfined === true ? undefined : root.sharedDir(input.vm)
    }
    const target = sshTarget(root, record)
    const local = yield* toRemote ? copyToGuest(target, request) : copyFromGuest(target, request)
    return { vm: input.vm, local, remote: input.remote, to_remote: toRemote }
  })

/** `stoat cp` names the direction; the tools say to_remote (reference §4). */
const copyView = (copied: typeof McpCopyResult.Type): typeof CopyResult.Type => ({
  vm: copied.vm,
  direction: copied.to_remote ? "to_guest" : "from_guest",
  local: copied.local,
  remote: copied.remote
})

export const copyTo = defineOperation({
  key: "guest.copy_to",
  tool: "copy_to",
  longRunning: true,
  expose: { cli: "cp", mcp: true },
  title: "Copy a host file into a VM",
  description:
    "Copy a regular file from the VM's shared folder on the host (symlinks leading out of it are refused) to an absolute guest path, over SFTP.",
  kind: "command",
  input: CopyInput,
  output: McpCopyResult,
  cliView: copyView,
  annotations: EXEC,
  touches: ["guest"],
  access: "manage",
  run: (input) => copy(input, true)
})

export const copyFrom = defineOperation({
  key: "guest.copy_from",
  tool: "copy_from",
  longRunning: true,
  expose: { cli: "cp", mcp: true },
  title: "Copy a file out of a VM",
  description:
    "Copy the guest file remote into the VM's shared folder on the host (symlinks leading out of it are refused); the host file appears complete or not at all.",
  kind: "command",
  input: CopyInput,
  output: McpCopyResult,
  cliView: copyView,
  annotations: EXEC,
  touches: ["guest"],
  access: "manage",
  run: (input) => copy(input, false)
})
