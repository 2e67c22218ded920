import { describe, expect, it } from "vitest"
import { createVm, updateVm } from "@stoat/core"
import { inputOf, schemaFlags } from "../src/flags.js"
import Create from "../src/commands/create.js"
import Update from "../src/commands/update.js"

describe("schemaFlags: oclif flags from an operation's input schema", () => {
  const create = schemaFlags(createVm.input)

  it("takes the description and the integer bounds from the field's schema, leaving the check to the schema", () => {
    const ram = create.integer("ram_mb")
    expect(ram).toMatchObject({ type: "option", description: "RAM in MiB (default 4096; tiny: 256) (256..1048576)" })
    // oclif would refuse out-of-range values in its own words; the operation's schema says it for CLI and MCP alike.
    expect(ram).not.toHaveProperty("max")
    expect(schemaFlags(updateVm.input).integer("ssh_port", "host port")).toMatchObject({
      description: "host port (1024..65535)"
    })
  })

  it("offers a literal union's members as the options, and words the description as a flag's", () => {
    expect(create.string("agent_access")).toMatchObject({
      options: ["none", "observe", "manage", "exec"],
      description: "guest access for MCP agents (default manage)"
    })
    expect(create.string("backend", "provisioning backend")).toMatchObject({
      options: ["apkovl", "cloudinit", "ssh", "direct"]
    })
    // "(CLI only)" says nothing at the CLI.
    expect(create.string("console_password").description).toBe("console password, or 'random'")
  })

  it("refuses a field the schema lacks, or one with no description and none given", () => {
    expect(() => create.integer("ram")).toThrow(/no field ram/)
    expect(() => schemaFlags(updateVm.input).string("share")).toThrow(/share has no description/)
  })

  it("maps the given flags back to their input fields, leaving the others out", () => {
    expect(inputOf(Update.flags, { ram: 512, "ssh-port": 2222, installed: false, set: ["a.b=c"] })).toEqual({
      ram_mb: 512,
      ssh_port: 2222,
      installed: false
    })
    expect(inputOf(Create.flags, { "console-password": "random", image: "tiny" })).toEqual({
      console_password: "random"
    })
  })
})
