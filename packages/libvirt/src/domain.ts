import { Effect } from "effect"
import {
  ControlRejected,
  ControlUnreachable,
  ProviderStartFailed,
  readPlacement,
  writeFileAtomic,
  type VmRef
} from "@stoat/core"
import { forwardNotBound } from "@stoat/qemu"
import { domainName, libvirtFiles } from "./domain-xml.js"
import { DEFAULT_URI, virsh, virshError, type VirshUnavailable } from "./virsh.js"

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

/** Ends a domain now (a failed or abandoned start); nothing to do when it is gone. */
export const destroyDomain = (uri: string, name: string) => Effect.ignore(virsh(uri, ["destroy", name]))

/**
 * Writes `xml` as the VM's domain file (kept for a person to read) and creates the transient
 * domain from it on `uri`; a failure, or an interrupt, leaves none behind.
 */
export const createTransientDomain = (
  uri: string,
  vm: VmRef,
  xml: string
): Effect.Effect<void, ProviderStartFailed | VirshUnavailable> =>
  Effect.gen(function* () {
    const file = libvirtFiles(vm.dir).domain
    const name = domainName(vm)
    yield* Effect.tryPromise({
      try: () => writeFileAtomic(file, xml),
      catch: () => new ProviderStartFailed({ message: `cannot write ${file}`, subject: vm.name })
    })
    const created = yield* virsh(uri, ["create", file]).pipe(Effect.onInterrupt(() => destroyDomain(uri, name)))
    if (created.code === 0) return
    yield* destroyDomain(uri, name)
    // QEMU binds the forwards on the libvirt host: a port taken there is reported as the QEMU
    // provider reports one taken here, and core moves the VM to another port.
    const portInUse = forwardNotBound(created.stderr)
    return yield* new ProviderStartFailed({
      message: `libvirt could not start VM "${vm.name}" on ${uri}: ${virshError(created)}`,
      subject: vm.name,
      ...(portInUse !== undefined ? { portInUse } : {})
    })
  })
