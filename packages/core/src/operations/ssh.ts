import { Effect, Schema } from "effect"
import { SshCommand } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import type { SshEndpoint } from "../ports/guest-transport.js"
import { jumpProxyCommand } from "../ssh/jump.js"
import { loadVm, requireRunning, sshTarget } from "../vm/records.js"
import { VmName } from "./inputs.js"
import { defineOperation, READ } from "./operation.js"

/**
 * The system ssh client's argv for a VM (original §1.7): loopback, the VM's port, stoat's key,
 * no host-key checking or recording (local VMs get fresh host keys), quiet, a short connect
 * timeout. Scripts get BatchMode (never prompt); an interactive session leaves it out. A VM on
 * a qemu+ssh:// host is reached through that host (a ProxyCommand of `ssh -W`, as stoat's own
 * connections go).
 */
export const sshArgv = (
  target: SshEndpoint & { readonly user: string; readonly privateKeyPath: string },
  interactive: boolean
): string[] => [
  "ssh",
  "-p",
  String(target.port),
  "-o",
  "StrictHostKeyChecking=no",
  "-o",
  "UserKnownHostsFile=/dev/null",
  "-o",
  "LogLevel=ERROR",
  "-o",
  "ConnectTimeout=5",
  ...(interactive ? [] : ["-o", "BatchMode=yes"]),
  ...(target.jump !== undefined ? ["-o", `ProxyCommand=${jumpProxyCommand(target.jump)}`] : []),
  "-i",
  target.privateKeyPath,
  `${target.user}@127.0.0.1`
]

export const sshCommand = defineOperation({
  key: "guest.ssh_command",
  tool: "ssh_command",
  // A person's terminal tool: the original leaves it out of MCP (original §5, "deliberately absent").
  expose: { cli: "ssh-command", mcp: false },
  title: "Show the ssh command line for a VM",
  description:
    "The system ssh client's argv that reaches the VM (port, key, user, no host-key checks). interactive=true is what stoat ssh runs: it needs the VM running and leaves BatchMode out.",
  kind: "query",
  input: Schema.Struct({ vm: VmName, interactive: Schema.optional(Schema.Boolean) }),
  output: SshCommand,
  annotations: READ,
  access: "exec",
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* loadVm(input.vm)
      if (input.interactive === true) yield* requireRunning(record)
      return { argv: sshArgv(sshTarget(yield* DataRoot, record), input.interactive === true) }
    })
})
