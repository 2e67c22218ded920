import { execFileSync, spawnSync } from "node:child_process"
import { mkdtemp, readFile, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import fc from "fast-check"
import { Cause, Effect, Exit, Option, Redacted } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import {
  renderMetaData,
  renderUserData,
  resolveConsolePassword,
  writeSeedIso,
  yamlString
} from "../../src/cloudinit/seed.js"
import { guestHostname } from "../../src/vm/names.js"

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGl0IGlzIG5vdCBhIHJlYWwga2V5IGF0IGFsbA stoat"
const base = { user: "stoat", shell: "/bin/bash", authorizedKey: KEY }

/** Reads a file back out of an ISO via its Joliet directory (sector 17's root), with no external tool. */
const jolietFile = (image: Buffer, name: string): string | undefined => {
  const vd = image.subarray(17 * 2048)
  const extent = vd.readUInt32LE(158)
  const size = vd.readUInt32LE(166)
  for (let at = extent * 2048; at < extent * 2048 + size && image[at]! > 0; at += image[at]!) {
    const id = Buffer.from(image.subarray(at + 33, at + 33 + image[at + 32]!))
    if (id.length > 1 && id.swap16().toString("utf16le") === name) {
      return image
        .subarray(image.readUInt32LE(at + 2) * 2048, image.readUInt32LE(at + 2) * 2048 + image.readUInt32LE(at + 10))
        .toString()
    }
  }
  return undefined
}

describe("user-data", () => {
  it("creates user stoat with the guest's shell, passwordless sudo, stoat's key and key-only ssh", () => {
    expect(renderUserData({ ...base, consolePassword: "stoat" })).toBe(
      [
        "#cloud-config",
        "users:",
        '  - name: "stoat"',
        '    shell: "/bin/bash"',
        '    sudo: "ALL=(ALL) NOPASSWD:ALL"',
        "    lock_passwd: false",
        '    plain_text_passwd: "stoat"',
        "    ssh_authorized_keys:",
        `      - "${KEY}"`,
        "ssh_pwauth: false",
        ""
      ].join("\n")
    )
  })

  it("keeps the password locked when none is given, and accepts a Redacted password", () => {
    expect(renderUserData(base)).toContain("lock_passwd: true")
    expect(renderUserData(base)).not.toContain("plain_text_passwd")
    expect(renderUserData({ ...base, shell: "/bin/ash", consolePassword: Redacted.make("s3cret") })).toContain(
      'plain_text_passwd: "s3cret"'
    )
  })

  it("switches to a cloud-config-archive only when there are extra documents", () => {
    const text = renderUserData({ ...base, consolePassword: "pw", userDataExtra: ["#cloud-config\npackages: [git]\n"] })
    expect(text.startsWith("#cloud-config-archive\n")).toBe(true)
    expect(text.match(/- type: "text\/cloud-config"/g)).toHaveLength(2)
    expect(text).toContain("Merge-Type")
    expect(renderUserData({ ...base, userDataExtra: [] }).startsWith("#cloud-config\n")).toBe(true)
  })

  it("refuses a multi-line key, a bad user name or a relative shell", () => {
    expect(() => renderUserData({ ...base, authorizedKey: `${KEY}\nssh-rsa AAAA evil` })).toThrow()
    expect(() => renderUserData({ ...base, user: "Root!" })).toThrow()
    expect(() => renderUserData({ ...base, shell: "bash" })).toThrow()
  })

  it("quotes any value so it stays one YAML scalar (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 80 }), (value) => {
        const quoted = yamlString(value)
        expect(quoted).not.toMatch(/[\n\r\u0085\u2028\u2029]/)
        expect(quoted.startsWith('"') && quoted.endsWith('"')).toBe(true)
        // JSON is the YAML subset used here, so a JSON parser reads the same string back.
        expect(JSON.parse(quoted)).toBe(value)
      }),
      { numRuns: 500 }
    )
  })
})

// A YAML parser cross-check when python3 with PyYAML is around (cloud-init itself parses with PyYAML).
const hasPyYaml = spawnSync("python3", ["-c", "import yaml"]).status === 0
describe.skipIf(!hasPyYaml)("user-data read by PyYAML", () => {
  // One python start for all documents: interpreter start-up dominates.
  const loadAll = (texts: ReadonlyArray<string>): unknown[] =>
    JSON.parse(
      execFileSync(
        "python3",
        ["-c", "import sys, json, yaml; print(json.dumps([yaml.safe_load(t) for t in json.load(sys.stdin)]))"],
        {
          input: JSON.stringify(texts),
          encoding: "utf8"
        }
      )
    )

  it("parses to the intended structure, whatever the password", () => {
    const password = 'p"a\\s:s #\u2028\t{x}'
    const [userData, archive, metaData] = loadAll([
      renderUserData({ ...base, consolePassword: password }),
      renderUserData({ ...base, userDataExtra: ["#cloud-config\nruncmd: [[touch, /x]]\n"] }),
      renderMetaData("web_1")
    ]) as [unknown, Array<unknown>, unknown]
    expect(userData).toEqual({
      users: [
        {
          name: "stoat",
          shell: "/bin/bash",
          sudo: "ALL=(ALL) NOPASSWD:ALL",
          lock_passwd: false,
          plain_text_passwd: password,
          ssh_authorized_keys: [KEY]
        }
      ],
      ssh_pwauth: false
    })
    expect(archive).toHaveLength(2)
    expect(archive[1]).toEqual({
      type: "text/cloud-config",
      "Merge-Type": "list(append)+dict(no_replace,recurse_list)+str()",
      content: "#cloud-config\nruncmd: [[touch, /x]]\n"
    })
    expect(metaData).toEqual({ "instance-id": "stoat-web_1", "local-hostname": "web-1" })
  })
})

describe("meta-data and hostnames", () => {
  it("uses instance-id stoat-<name> unless told otherwise", () => {
    expect(renderMetaData("web")).toBe('instance-id: "stoat-web"\nlocal-hostname: "web"\n')
    expect(renderMetaData("web", "stoat-web-2")).toContain('instance-id: "stoat-web-2"')
  })

  it("turns a VM name into a valid hostname label", () => {
    expect(guestHostname("Web_Server.1")).toBe("web-server-1")
    expect(guestHostname("---")).toBe("stoat")
    expect(guestHostname("a".repeat(80))).toHaveLength(63)
    expect(guestHostname("_x_")).toBe("x")
    expect(guestHostname("my_vm.test")).toBe("my-vm-test")
  })
})

describe("console password", () => {
  it("defaults to stoat, makes 32 hex characters for random, passes anything else through", () => {
    expect(Redacted.value(resolveConsolePassword(undefined))).toBe("stoat")
    expect(Redacted.value(resolveConsolePassword(""))).toBe("stoat")
    expect(Redacted.value(resolveConsolePassword("hunter2"))).toBe("hunter2")
    const random = Redacted.value(resolveConsolePassword("random"))
    expect(random).toMatch(/^[0-9a-f]{32}$/)
    expect(Redacted.value(resolveConsolePassword("random"))).not.toBe(random)
  })

  it("never shows the password when printed or logged", () => {
    const secret = resolveConsolePassword("random")
    const value = Redacted.value(secret)
    expect(String(secret)).not.toContain(value)
    expect(JSON.stringify({ secret })).not.toContain(value)
  })
})

describe("writeSeedIso", () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "stoat-seed-"))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it("writes a 0600 CIDATA ISO holding user-data, meta-data and the optional network-config", async () => {
    const path = join(dir, "ovl", "seed.iso")
    const password = resolveConsolePassword("random")
    const seedDir = join(dir, "ovl", "seed")
    await Effect.runPromise(
      writeSeedIso({ path, seedDir, vmName: "web", ...base, consolePassword: password, networkConfig: "version: 2\n" })
    )
    expect((await stat(path)).mode & 0o777).toBe(0o600)
    expect((await stat(join(seedDir, "user-data"))).mode & 0o777).toBe(0o600)
    expect(await readFile(join(seedDir, "meta-data"), "utf8")).toBe('instance-id: "stoat-web"\nlocal-hostname: "web"\n')
    const image = await readFile(path)
    expect(image.subarray(16 * 2048 + 40, 16 * 2048 + 46).toString("latin1")).toBe("CIDATA")
    expect(jolietFile(image, "user-data")).toBe(renderUserData({ ...base, consolePassword: password }))
    expect(jolietFile(image, "meta-data")).toBe('instance-id: "stoat-web"\nlocal-hostname: "web"\n')
    expect(jolietFile(image, "network-config")).toBe("version: 2\n")
  })

  it("fails typed, without the password in the message, when it cannot write", async () => {
    // A regular file where the parent folder should be makes the write fail.
    const blocker = join(dir, "file")
    await Effect.runPromise(writeSeedIso({ path: blocker, vmName: "web", ...base }))
    const failed = await Effect.runPromiseExit(
      writeSeedIso({ path: join(blocker, "seed.iso"), vmName: "web", ...base, consolePassword: "do-not-show-me" })
    )
    const error = Exit.isFailure(failed) ? Option.getOrUndefined(Cause.failureOption(failed.cause)) : undefined
    expect(error?.code).toBe("internal")
    expect(error?.message).not.toContain("do-not-show-me")
  })

  it("fails with invalid_spec on a bad key", async () => {
    const exit = await Effect.runPromiseExit(
      writeSeedIso({ path: join(dir, "s.iso"), vmName: "web", ...base, authorizedKey: "" })
    )
    const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    expect(error?.code).toBe("invalid_spec")
  })
})
