import { Either } from "effect"
import type { Guest } from "@stoat/wire"
import { CapabilityUnavailable } from "../errors.js"
import type { SshTarget } from "../ports/guest-transport.js"

/**
 * argv run as root in a guest: unchanged for a root ssh user, else behind the guest definition's
 * `escalate` words (e.g. `sudo -n`). The one policy for every root command (guest tools, recipes,
 * checkpoints): a guest that defines no escalate command cannot run `what` as root, and says so as
 * capability_unavailable (reason escalate) — never silently unprivileged, never a hard-coded sudo
 * the guest may not have.
 */
export const asRoot = (
  target: Pick<SshTarget, "vm" | "user">,
  guest: Pick<Guest, "name" | "escalate">,
  argv: ReadonlyArray<string>,
  what: string
): Either.Either<ReadonlyArray<string>, CapabilityUnavailable> => {
  if (target.user === "root") return Either.right(argv)
  if (guest.escalate.length === 0) {
    return Either.left(
      new CapabilityUnavailable({
        reason: "escalate",
        message: `${what} runs as root, but VM ${target.vm}'s ssh user is ${target.user} and guest ${guest.name || "(unknown)"} defines no escalate command`,
        subject: target.vm
      })
    )
  }
  return Either.right([...guest.escalate, ...argv])
}
