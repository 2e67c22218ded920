import { mkdtempSync, rmSync, statSync, readdirSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { layoutOf } from "../../src/platform/data-root.js"
import { ensureClientKey, ensureGuestHostKey } from "../../src/platform/keys.js"

const dirs: Array<string> = []
const freshRoot = () => {
  const dir = mkdtempSync(join(tmpdir(), "stoat-keys-"))
  dirs.push(dir)
  // A root that does not exist yet: key generation must create it.
  return layoutOf(join(dir, "home"))
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

describe("ssh keys", () => {
  it("creates the client key pair once, private 0600", async () => {
    const root = freshRoot()
    const first = await ensureClientKey(root)
    expect(first.privateKeyPath).toBe(join(root.root, "id_stoat"))
    expect(first.publicKey).toMatch(/^ssh-ed25519 \S+ stoat$/)
    expect(statSync(first.privateKeyPath).mode & 0o777).toBe(0o600)
    const mtime = statSync(first.privateKeyPath).mtimeMs
    const again = await ensureClientKey(root)
    expect(again).toEqual(first)
    expect(statSync(first.privateKeyPath).mtimeMs).toBe(mtime)
  })

  it("keeps the guest host key separate, in OpenSSH format", async () => {
    const root = freshRoot()
    const client = await ensureClientKey(root)
    const host = await ensureGuestHostKey(root)
    expect(host.privateKeyPath).toBe(join(root.root, "guest_host_ed25519_key"))
    expect(host.publicKey).not.toBe(client.publicKey)
    expect(statSync(host.privateKeyPath).mode & 0o777).toBe(0o600)
    const { readFileSync } = await import("node:fs")
    expect(readFileSync(host.privateKeyPath, "utf8")).toMatch(/^-----BEGIN OPENSSH PRIVATE KEY-----/)
    expect(await ensureGuestHostKey(root)).toEqual(host)
  })

  it("gives racing callers one key", async () => {
    const root = freshRoot()
    const pairs = await Promise.all([1, 2, 3, 4, 5].map(() => ensureClientKey(root)))
    expect(new Set(pairs.map((p) => p.publicKey)).size).toBe(1)
    expect(readdirSync(root.root).filter((n) => n.includes(".tmp-"))).toEqual([])
  })

  it("re-derives a missing .pub from the existing private key instead of replacing it", async () => {
    const root = freshRoot()
    const first = await ensureClientKey(root)
    await rm(`${first.privateKeyPath}.pub`)
    const again = await ensureClientKey(root)
    expect(again.publicKey.split(" ").slice(0, 2)).toEqual(first.publicKey.split(" ").slice(0, 2))
  })

  it("clears leftovers of a generator that died mid-way", async () => {
    const root = freshRoot()
    await ensureGuestHostKey(root) // creates the root
    writeFileSync(join(root.root, "id_stoat.tmp-999-dead"), "half")
    writeFileSync(join(root.root, "id_stoat.pub"), "ssh-ed25519 AAAA orphan\n") // renamed in, then crashed
    const pair = await ensureClientKey(root)
    expect(pair.publicKey).not.toContain("orphan")
    expect(readdirSync(root.root).filter((n) => n.includes(".tmp-"))).toEqual([])
  })
})
