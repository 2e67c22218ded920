import { execFileSync, spawnSync } from "node:child_process"
import { createServer, type AddressInfo } from "node:net"
import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { virsh } from "../src/virsh.js"

/** These tests run the real virsh: a missing client is a failure, never a skip. */
const requireVirsh = () => {
  try {
    execFileSync("virsh", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("virsh is required by the @stoat/libvirt tests (apt-get install libvirt-clients)")
  }
}

const failure = async (uri: string) => {
  const result = await Effect.runPromise(Effect.either(virsh(uri, ["list"])))
  if (Either.isRight(result)) throw new Error(`virsh -c ${uri} list worked`)
  return result.left
}

describe("virsh failures that are the connection's", () => {
  it("a daemon that is not there is cannot_reach, saying how to start it", async () => {
    requireVirsh()
    const error = await failure("qemu+unix:///system?socket=/nonexistent/libvirt-sock")
    expect(error).toMatchObject({ _tag: "CannotReach", code: "cannot_reach" })
    expect(error.message).toMatch(/refused the connection.*start the daemon/)
  })

  it("a host that does not resolve is cannot_reach, saying to check the host", async () => {
    requireVirsh()
    const error = await failure("qemu+ssh://root@nonexistent.invalid/system")
    expect(error).toMatchObject({ _tag: "CannotReach", code: "cannot_reach" })
    expect(error.message).toMatch(/unreachable.*check the host name/)
  })

  it("an ssh host with no sshd on the port is cannot_reach, saying so, with doctor --host of that URI as the hint", async () => {
    requireVirsh()
    const uri = "qemu+ssh://root@127.0.0.1:1/system"
    const error = await failure(uri)
    expect(error).toMatchObject({ _tag: "CannotReach", subject: uri })
    expect(error.message).toMatch(/ssh to libvirt host .* was refused .*Connection refused.*check that sshd runs/)
    expect(error.hint).toEqual({ advice: "check it", steps: [{ operation: "host.doctor", input: { host: uri } }] })
  })

  it("a host that accepts and never answers is cannot_reach at the time limit, and leaves no ssh behind", async () => {
    requireVirsh()
    // A TCP listener that never sends an ssh banner: ssh waits on it as on a host gone silent.
    const silent = createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    const port = (silent.address() as AddressInfo).port
    try {
      const uri = `qemu+ssh://root@127.0.0.1:${port}/system`
      const result = await Effect.runPromise(Effect.either(virsh(uri, ["list"], { timeoutMs: 1_500 })))
      expect(Either.isLeft(result) && result.left).toMatchObject({ _tag: "CannotReach", subject: uri })
      expect(Either.isLeft(result) && result.left.message).toMatch(/did not answer in time/)
      const left = spawnSync("pgrep", ["-f", "--", `-p ${port} `], { encoding: "utf8" }).stdout.trim()
      expect(left).toBe("")
    } finally {
      silent.close()
    }
  })

  it("no virsh on PATH is qemu_missing, naming the package to install", async () => {
    const path = process.env["PATH"]
    process.env["PATH"] = "/nonexistent"
    try {
      const error = await failure("qemu:///system")
      expect(error).toMatchObject({ _tag: "ProviderMissing" })
      expect(error.message).toMatch(/apt-get install libvirt-clients/)
    } finally {
      process.env["PATH"] = path
    }
  })

  it("a command that fails on a working connection is a result, for the caller to judge", async () => {
    requireVirsh()
    const result = await Effect.runPromise(virsh("test:///default", ["domstate", "no-such-domain"]))
    expect(result.code).not.toBe(0)
    expect(result.stderr).toMatch(/failed to get domain/)
  })
})
