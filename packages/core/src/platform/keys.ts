import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chmod, mkdir, readFile, readdir, rename, rm, stat } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { Cause, Duration, Effect, Exit } from "effect"
import type { DataRootPaths } from "./data-root.js"
import { Internal, type LimitReached, type Timeout } from "../errors.js"
import { diskFull, isDiskFull } from "./fs.js"
import { writeFileAtomic } from "./files.js"
import { makeLocks, type LockError } from "./locks.js"

/** An ed25519 key pair on disk: the private key file (0600) and the one-line OpenSSH public key. */
export interface KeyPair {
  readonly privateKeyPath: string
  readonly publicKey: string
}

/** How long a caller waits for another process that is generating the same key. */
const KEYGEN_WAIT = Duration.seconds(60)

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false
  )

/** The pair when both halves are on disk; the private file is written last, so it marks completion. */
const completePair = async (privateKeyPath: string): Promise<KeyPair | undefined> => {
  if (!(await exists(privateKeyPath))) return undefined
  const publicKey = await readFile(`${privateKeyPath}.pub`, "utf8").then(
    (text) => text.trim(),
    () => ""
  )
  return publicKey === "" ? undefined : { privateKeyPath, publicKey }
}

const sshKeygen = (args: ReadonlyArray<string>) =>
  new Promise<string>((resolve, reject) => {
    execFile("ssh-keygen", [...args], { encoding: "utf8" }, (error, stdout, stderr) => {
      if (error === null) return resolve(stdout)
      if ((error as NodeJS.ErrnoException).code === "ENOENT")
        return reject(new Error("ssh-keygen is not installed (install openssh-client)"))
      reject(new Error(`ssh-keygen ${args.join(" ")} failed: ${stderr.trim() || error.message}`))
    })
  })

/** Runs only under the key lock, so nobody else is generating this key right now. */
const generate = async (privateKeyPath: string, comment: string): Promise<KeyPair> => {
  const done = await completePair(privateKeyPath)
  if (done) return done
  const dir = dirname(privateKeyPath)
  const base = basename(privateKeyPath)
  await mkdir(dir, { recursive: true })
  // Leftovers of a generator that died mid-way (we hold the lock, so none is running).
  for (const name of await readdir(dir)) if (name.startsWith(`${base}.tmp-`)) await rm(join(dir, name), { force: true })

  if (await exists(privateKeyPath)) {
    // A private key whose .pub went missing: guests may already trust it, so derive the public half instead of replacing it.
    await chmod(privateKeyPath, 0o600)
    const publicKey = (await sshKeygen(["-y", "-f", privateKeyPath])).trim()
    await writeFileAtomic(`${privateKeyPath}.pub`, `${publicKey}\n`, 0o644)
  } else {
    // Generate under a temporary name and rename into place, public half first: a crash leaves
    // either nothing or an orphan .pub that the next run overwrites, never a half-written key.
    const tmp = `${privateKeyPath}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`
    try {
      await sshKeygen(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", tmp])
      await chmod(tmp, 0o600)
      await rename(`${tmp}.pub`, `${privateKeyPath}.pub`)
      await rename(tmp, privateKeyPath)
    } finally {
      await rm(tmp, { force: true })
      await rm(`${tmp}.pub`, { force: true })
    }
  }
  const made = await completePair(privateKeyPath)
  if (!made) throw new Error(`key ${privateKeyPath} is still incomplete after generation`)
  return made
}

const ensurePair = (
  root: DataRootPaths,
  privateKeyPath: string,
  comment: string
): Effect.Effect<KeyPair, Internal | Timeout | LockError> => {
  const failed = (cause: unknown) =>
    new Internal({
      message: `cannot create ssh key ${privateKeyPath}: ${cause instanceof Error ? cause.message : String(cause)}`,
      subject: privateKeyPath
    })
  const fast = Effect.tryPromise({ try: () => completePair(privateKeyPath), catch: failed })
  // A full file system is said as such (rm and prune free space), like any write of stoat's.
  const locked = Effect.catchAll(
    Effect.tryPromise({ try: () => generate(privateKeyPath, comment), catch: (cause) => cause }),
    (cause): Effect.Effect<never, Internal | LimitReached> =>
      isDiskFull(cause)
        ? Effect.flatMap(diskFull(`cannot create ssh key ${privateKeyPath}`, privateKeyPath), Effect.fail)
        : Effect.fail(failed(cause))
  )
  // The SQLite lock is released by the kernel if the holder dies, unlike an O_EXCL lock file.
  const locks = makeLocks(root.keysLock, () => root.keysLock, KEYGEN_WAIT)
  return Effect.flatMap(fast, (pair) => (pair ? Effect.succeed(pair) : locks.withRootLock(locked)))
}

/** `<root>/id_stoat` (+ `.pub`): the client key every VM trusts. Created once, under `<root>/.keys.lock`. */
export const clientKeyPair = (root: DataRootPaths): Effect.Effect<KeyPair, Internal | Timeout | LockError> =>
  ensurePair(root, root.clientKey, "stoat")

/** `<root>/guest_host_ed25519_key` (+ `.pub`): the stable sshd host key baked into guests (OpenSSH format). */
export const guestHostKeyPair = (root: DataRootPaths): Effect.Effect<KeyPair, Internal | Timeout | LockError> =>
  ensurePair(root, root.hostKey, "stoat")

/** Promise form for non-Effect callers; rejects with the typed error itself (`Internal`, `Timeout` or `InvalidSpec`). */
const runTyped = async <A, E>(effect: Effect.Effect<A, E>): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}

export const ensureClientKey = (root: DataRootPaths): Promise<KeyPair> => runTyped(clientKeyPair(root))
export const ensureGuestHostKey = (root: DataRootPaths): Promise<KeyPair> => runTyped(guestHostKeyPair(root))
