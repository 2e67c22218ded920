import { describe, expect, it } from "vitest"
import { preParse } from "../src/argv.js"

describe("preParse for exec", () => {
  it("takes the guest command after the VM name, flags and --json included", () => {
    expect(preParse(["exec", "dev", "ls", "-la", "--json"])).toMatchObject({ json: false, rest: ["exec", "dev"], guest: ["ls", "-la", "--json"] })
    expect(preParse(["--json", "exec", "dev", "--", "sh", "-c", "x"])).toMatchObject({ json: true, rest: ["exec", "dev"], guest: ["sh", "-c", "x"] })
  })

  it("reads --timeout's value before the VM name as the flag's, not as the VM", () => {
    expect(preParse(["exec", "--timeout", "5", "dev", "sleep", "9"])).toMatchObject({ rest: ["exec", "--timeout", "5", "dev"], guest: ["sleep", "9"] })
    expect(preParse(["exec", "--timeout=5", "dev", "sleep", "9"])).toMatchObject({ rest: ["exec", "--timeout=5", "dev"], guest: ["sleep", "9"] })
    // After the VM name, --timeout belongs to the guest command.
    expect(preParse(["exec", "dev", "--timeout", "5"])).toMatchObject({ rest: ["exec", "dev"], guest: ["--timeout", "5"] })
  })
})
