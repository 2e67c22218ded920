import { Effect } from "effect"
import { ControlRejected, ControlUnreachable, readPlacement, type VmRef } from "@stoat/core"
import { domainName } from "./domain-xml.js"
import { DEFAULT_URI, virsh, virshError } from "./virsh.js"

/** The libvirt URI a VM lives on: its vm.toml's `host`, else the local system daemon. */
export const uriOf = (vm: VmRef): string => readPlacement(vm.dir).host || DEFAULT_URI

/** A QMP command to the VM's QEMU through libvirt (qemu-monitor-command): the monitor libvirt owns. */
export const monitor = <A>(
  vm: VmRef,
  command: string,
  args?: Record<string, unknown>
): Effect.Effect<A, ControlUnreachable | ControlRejected> =>
  Effect.flatMap(
    virsh(uriOf(vm), [
      "qemu-monitor-command",
      domainName(vm),
      JSON.stringify({ execute: command, ...(args !== undefined ? { arguments: args } : {}) })
    ]).pipe(Effect.mapError((error) => new ControlUnreachable({ message: error.message, subject: vm.name }))),
    (result) => {
      if (result.code !== 0)
        return Effect.fail(new ControlRejected({ message: `${command}: ${virshError(result)}`, subject: vm.name }))
      const reply = JSON.parse(result.stdout) as {
        readonly return?: A
        readonly error?: { readonly desc?: string }
      }
      return reply.error !== undefined
        ? Effect.fail(
            new ControlRejected({ message: `${command}: ${reply.error.desc ?? "refused"}`, subject: vm.name })
          )
        : Effect.succeed(reply.return as A)
    }
  )
