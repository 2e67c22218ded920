import { describe, expect, it } from "vitest"
import { preParse } from "../src/argv.js"

describe("preParse: the guest command after the VM name", () => {
  it.each([
    [["exec", "dev", "ls", "-la", "--json"], ["exec", "dev"], ["ls", "-la", "--json"], false],
    [["--json", "exec", "dev", "--", "cat", "-"], ["exec", "dev"], ["cat", "-"], true],
    [["ssh", "dev", "uname", "-a"], ["ssh", "dev"], ["uname", "-a"], false],
    [["ssh", "dev"], ["ssh", "dev"], [], false],
    [["jobs", "start", "dev", "make", "-j4", "-h"], ["jobs", "start", "dev"], ["make", "-j4", "-h"], false],
    [
      ["jobs", "start", "--cwd", "/srv", "--env", "A=1", "dev", "--", "./run", "--cwd", "x"],
      ["jobs", "start", "--cwd", "/srv", "--env", "A=1", "dev"],
      ["./run", "--cwd", "x"],
      false
    ],
    [["jobs", "start", "--cwd=/srv", "dev", "ls"], ["jobs", "start", "--cwd=/srv", "dev"], ["ls"], false],
    [["--json", "jobs", "start", "dev", "sleep", "9"], ["jobs", "start", "dev"], ["sleep", "9"], true]
  ])("%j → oclif %j, guest %j", (argv, rest, guest, json) => {
    expect(preParse(argv)).toMatchObject({ rest, guest, json, help: false })
  })

  it("other jobs commands keep every word for oclif", () => {
    expect(preParse(["jobs", "wait", "dev", "j-0123abcd", "--timeout", "5"])).toMatchObject({
      rest: ["jobs", "wait", "dev", "j-0123abcd", "--timeout", "5"],
      guest: undefined
    })
    expect(preParse(["jobs", "ls", "--json", "dev"])).toMatchObject({
      rest: ["jobs", "ls", "dev"],
      json: true,
      guest: undefined
    })
  })

  it("help words before the VM name are stoat's, after it the guest's", () => {
    expect(preParse(["jobs", "start", "--help"])).toMatchObject({ help: true })
    expect(preParse(["ssh", "dev", "--help"])).toMatchObject({ help: false, guest: ["--help"] })
  })

  it("reads --timeout's value before the VM name as the flag's, not as the VM", () => {
    expect(preParse(["exec", "--timeout", "5", "dev", "sleep", "9"])).toMatchObject({
      rest: ["exec", "--timeout", "5", "dev"],
      guest: ["sleep", "9"]
    })
    expect(preParse(["exec", "--timeout=5", "dev", "sleep", "9"])).toMatchObject({
      rest: ["exec", "--timeout=5", "dev"],
      guest: ["sleep", "9"]
    })
    // After the VM name, --timeout belongs to the guest command.
    expect(preParse(["exec", "dev", "--timeout", "5"])).toMatchObject({
      rest: ["exec", "dev"],
      guest: ["--timeout", "5"]
    })
  })
})
