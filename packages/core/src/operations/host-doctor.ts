import { Effect, Option, Schema } from "effect"
import type { DoctorReport, HostCheck } from "@stoat/wire"
import { CapabilityUnavailable } from "../errors.js"
import { GuestTransport, type SshJump } from "../ports/guest-transport.js"
import { HostChecks } from "../ports/hypervisor.js"
import { jumpArgv, jumpName } from "../ssh/jump.js"
import { shellWord } from "../ssh/quote.js"
import { LIBVIRT_URI } from "../vm/config.js"
import { sshJumpOf } from "../vm/placement.js"
import { hostOnly } from "./operation.js"

/** doctor's one input: a host to check instead of this machine (a person's choice, so CLI only). */
export const DoctorInput = Schema.Struct({
  host: hostOnly(
    Schema.optional(Schema.String.pipe(Schema.pattern(LIBVIRT_URI))).annotations({
      description:
        "Check this libvirt host (a URI such as qemu+ssh://user@host/system) instead of this machine (CLI only)"
    })
  )
})

const JUMP_PROBE_MS = 15_000

/**
 * Guests of a qemu+ssh:// host are reached through it (`ssh -W` to its loopback): proven by the
 * same probe `up --wait` makes, aimed at the host's own sshd (the URI's port, else 22), whose
 * banner answers on its loopback as a guest's forwarded port does.
 */
const guestSshCheck = (jump: SshJump): Effect.Effect<HostCheck, never, GuestTransport> => {
  const port = jump.port ?? 22
  return Effect.map(
    Effect.flatMap(GuestTransport, (transport) => transport.probe(port, JUMP_PROBE_MS, jump)),
    (ok): HostCheck => ({
      name: "guest-ssh",
      ok,
      detail: ok
        ? `guests there are reached through ${jumpName(jump)} (ssh -W to its loopback works)`
        : `ssh -W through ${jumpName(jump)} did not reach its own sshd at 127.0.0.1:${port}; stoat reaches the guests of this host that way`,
      fix: ok
        ? []
        : [
            `ssh ${jumpArgv(jump, port).map(shellWord).join(" ")} </dev/null  # OpenSSH's own error`,
            "AllowTcpForwarding yes in the host's sshd_config"
          ],
      optional: false
    })
  )
}

/** doctor of one provider host, by the provider that places VMs there; healthy as for this machine. */
export const hostDoctor = (
  host: string
): Effect.Effect<typeof DoctorReport.Type, CapabilityUnavailable, GuestTransport> =>
  Effect.flatMap(
    Effect.serviceOption(HostChecks),
    Option.match({
      onNone: () =>
        Effect.fail(
          new CapabilityUnavailable({
            message: `no provider of this stoat runs VMs on other hosts, so ${host} cannot be checked`,
            subject: host,
            reason: "provider_unsupported"
          })
        ),
      onSome: (hosts) =>
        Effect.gen(function* () {
          const jump = sshJumpOf(host)
          const hostChecks = yield* hosts.check(host)
          const connected = hostChecks.every((check) => check.ok || check.optional)
          const checks = [
            ...hostChecks,
            ...(jump === undefined
              ? []
              : [
                  connected
                    ? yield* guestSshCheck(jump)
                    : {
                        name: "guest-ssh",
                        ok: false,
                        detail: "not probed: the checks above failed",
                        fix: [],
                        optional: true
                      }
                ])
          ]
          return { healthy: checks.every((check) => check.ok || check.optional), checks }
        })
    })
  )
