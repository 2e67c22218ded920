import { randomBytes } from "node:crypto"
import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { Internal, InvalidSpec } from "../errors.js"
import { writeFileAtomic } from "../platform/files.js"
import { writeIso } from "./iso.js"
import { guestHostname } from "../vm/names.js"

export const DEFAULT_CONSOLE_PASSWORD = "stoat"

/**
 * The console password a VM is created with: empty ⇒ `stoat`, `random` ⇒ 32 hex characters,
 * anything else verbatim. Redacted so it cannot reach a log or an error message by accident.
 */
export const resolveConsolePassword = (setting: string | undefined): Redacted.Redacted<string> =>
  Redacted.make(
    setting === undefined || setting === ""
      ? DEFAULT_CONSOLE_PASSWORD
      : setting === "random"
        ? randomBytes(16).toString("hex")
        : setting
  )

/**
 * A YAML double-quoted scalar. JSON string syntax is valid YAML except for characters YAML
 * treats as line breaks (U+0085, U+2028, U+2029), which are escaped too so no value can break
 * out of its line.
 */
export const yamlString = (value: string): string =>
  JSON.stringify(value).replace(
    /[\u007f-\u009f\u2028\u2029\ufeff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
  )

export interface UserDataOptions {
  readonly user: string
  /** The guest's shell: cloud-init's user module refuses the account if it does not exist. */
  readonly shell: string
  /** One OpenSSH public key line (stoat's id_stoat.pub). */
  readonly authorizedKey: string
  /** Undefined ⇒ no console password (the account stays password-locked). */
  readonly consolePassword?: string | Redacted.Redacted<string> | undefined
  /**
   * Further `#cloud-config` documents (mounts, packages, recipe bodies). With any, the seed is a
   * cloud-config-archive whose parts append lists rather than the first one winning.
   */
  readonly userDataExtra?: ReadonlyArray<string> | undefined
}

const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/

const checkUserData = (options: UserDataOptions): InvalidSpec | undefined => {
  if (!USER_NAME.test(options.user))
    return new InvalidSpec({ message: `invalid seed user name "${options.user}"`, subject: "user" })
  if (!options.shell.startsWith("/") || /\s/.test(options.shell)) {
    return new InvalidSpec({
      message: `invalid login shell "${options.shell}": expected an absolute path`,
      subject: "shell"
    })
  }
  const key = options.authorizedKey.trim()
  if (key === "" || /[\r\n]/.test(key))
    return new InvalidSpec({ message: "the authorized key must be one non-empty line", subject: "authorized_key" })
  return undefined
}

// cloud-init's default merge lets the first document's lists win; each archive part asks for appending.
const MERGE_TYPE = "list(append)+dict(no_replace,recurse_list)+str()"

/**
 * The user-data: user `stoat` (the guest's shell, passwordless sudo, stoat's key), key-only ssh,
 * and a console password when one is set. One document is sent as plain `#cloud-config`.
 */
export const renderUserData = (options: UserDataOptions): string => {
  const invalid = checkUserData(options)
  if (invalid) throw invalid
  const password =
    options.consolePassword === undefined
      ? undefined
      : Redacted.isRedacted(options.consolePassword)
        ? Redacted.value(options.consolePassword)
        : options.consolePassword
  const lines = [
    "#cloud-config",
    "users:",
    `  - name: ${yamlString(options.user)}`,
    `    shell: ${yamlString(options.shell)}`,
    `    sudo: ${yamlString("ALL=(ALL) NOPASSWD:ALL")}`,
    ...(password !== undefined
      ? ["    lock_passwd: false", `    plain_text_passwd: ${yamlString(password)}`]
      : ["    lock_passwd: true"]),
    "    ssh_authorized_keys:",
    `      - ${yamlString(options.authorizedKey.trim())}`,
    "ssh_pwauth: false",
    ""
  ]
  const base = lines.join("\n")
  const extra = options.userDataExtra ?? []
  if (extra.length === 0) return base
  const parts = [base, ...extra].map(
    (content) =>
      `- type: ${yamlString("text/cloud-config")}\n  Merge-Type: ${yamlString(MERGE_TYPE)}\n  content: ${yamlString(content)}\n`
  )
  return `#cloud-config-archive\n${parts.join("")}`
}

export const renderMetaData = (vmName: string, instanceId = `stoat-${vmName}`): string =>
  `instance-id: ${yamlString(instanceId)}\nlocal-hostname: ${yamlString(guestHostname(vmName))}\n`

export interface SeedOptions extends UserDataOptions {
  /** Where the seed ISO goes, e.g. `<vm>/ovl/seed.iso`. */
  readonly path: string
  readonly vmName: string
  /** Defaults to `stoat-<vmName>`; a new id makes cloud-init run its first-boot modules again. */
  readonly instanceId?: string | undefined
  /** Optional NoCloud network-config (v1 or v2 YAML). */
  readonly networkConfig?: string | undefined
  /** Fixes the ISO timestamps (reproducible output). */
  readonly date?: Date | undefined
  /**
   * Also writes the documents as plain files here (the data root keeps them in `<vm>/ovl/seed/`
   * for inspection), mode 0600 like the ISO.
   */
  readonly seedDir?: string | undefined
}

/**
 * Writes the NoCloud seed ISO (volume `CIDATA`; `user-data`, `meta-data`, optionally
 * `network-config`) atomically with mode 0600, since it carries the console password.
 * Errors never include the password.
 */
export const writeSeedIso = (options: SeedOptions): Effect.Effect<void, InvalidSpec | Internal> =>
  Effect.gen(function* () {
    const invalid = checkUserData(options)
    if (invalid) return yield* invalid
    const files = [
      { name: "user-data", data: renderUserData(options) },
      { name: "meta-data", data: renderMetaData(options.vmName, options.instanceId) },
      ...(options.networkConfig !== undefined ? [{ name: "network-config", data: options.networkConfig }] : [])
    ]
    yield* Effect.tryPromise({
      try: async () => {
        if (options.seedDir !== undefined) {
          const dir = options.seedDir
          for (const file of files) await writeFileAtomic(join(dir, file.name), file.data, 0o600)
        }
        await writeIso(options.path, files, {
          volumeId: "CIDATA",
          mode: 0o600,
          ...(options.date ? { date: options.date } : {})
        })
      },
      catch: (cause) =>
        new Internal({
          message: `could not write the cloud-init seed ${options.path}: ${cause instanceof Error ? cause.message : String(cause)}`,
          subject: options.path
        })
    })
  })
