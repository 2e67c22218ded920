import { describe, expect, it } from "vitest"
import { jumpArgv, openJump } from "../../src/ssh/jump.js"

describe("the jump to a libvirt host's loopback", () => {
  it("is OpenSSH's -W with the URI's settings (no_verify: no known_hosts either), `--` before the host so no URI becomes an option", () => {
    expect(jumpArgv({ host: "-oProxyCommand=x", user: "u", port: 2022, noVerify: true }, 2201)).toEqual([
      "-W",
      "127.0.0.1:2201",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=10",
      "-o",
      "LogLevel=ERROR",
      "-o",
      "StrictHostKeyChecking=no",
      "-o",
      "UserKnownHostsFile=/dev/null",
      "-p",
      "2022",
      "-l",
      "u",
      "--",
      "-oProxyCommand=x"
    ])
  })

  it("fails with ssh's own reason when the host does not answer", async () => {
    const sock = openJump({ host: "127.0.0.1", port: 1 }, 22)
    const error = await new Promise<Error>((resolve) => sock.once("error", resolve))
    expect(error.message).toMatch(
      /^ssh to 127\.0\.0\.1:1 \(forwarding 127\.0\.0\.1:22\) ended with exit 255: .*Connection refused/
    )
  })
})
