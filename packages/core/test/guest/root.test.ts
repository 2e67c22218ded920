import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { asRoot } from "../../src/guest/root.js"

const sudoGuest = { name: "debian", escalate: ["sudo", "-n"] }
const bareGuest = { name: "tiny", escalate: [] }

describe("asRoot, the one way a command becomes root in a guest", () => {
  it("leaves a root user's argv alone, whatever the guest defines", () => {
    expect(asRoot({ vm: "box", user: "root" }, bareGuest, ["id"], "x")).toEqual(Either.right(["id"]))
  })

  it("puts the guest's escalate words in front for another user", () => {
    expect(asRoot({ vm: "box", user: "stoat" }, sudoGuest, ["id", "-u"], "x")).toEqual(
      Either.right(["sudo", "-n", "id", "-u"])
    )
  })

  it("refuses with capability_unavailable (reason escalate) when the guest has none: never runs unprivileged", () => {
    const refused = asRoot({ vm: "box", user: "guest" }, bareGuest, ["id"], "applying recipes")
    expect(Either.isLeft(refused) && refused.left).toMatchObject({
      code: "capability_unavailable",
      reason: "escalate",
      subject: "box",
      message:
        "applying recipes runs as root, but VM box's ssh user is guest and guest tiny defines no escalate command"
    })
  })
})
