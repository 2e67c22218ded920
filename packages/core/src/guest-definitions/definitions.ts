import { existsSync } from "node:fs"
import { join } from "node:path"
import { Context, Effect, Either, Layer, ParseResult, Schema } from "effect"
import { parse } from "smol-toml"
import { Json, type Guest } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import * as fs from "../platform/fs.js"
import { adviseLookup, InvalidSpec, NotFound } from "../errors.js"
import { byName, closest } from "../platform/names.js"

/**
 * A guest definition as core uses it: the wire Guest plus `log_path`, the system log tail_log
 * reads, which the wire DTO (contract v3) does not carry.
 */
export type LoadedGuest = Guest & { readonly log_path?: string }
export type GuestDef = Omit<LoadedGuest, "source">

const systemdSvc = {
  enable: "systemctl enable {name}",
  start: "systemctl start {name}",
  stop: "systemctl stop {name}",
  restart: "systemctl restart {name}",
  status: "systemctl status {name}"
}
const systemdCmd = { download: "curl -fsSL -o", useradd: "useradd -m -s /bin/bash {name}" }

const systemdGuest = (
  name: string,
  pkg: GuestDef["pkg"],
  extra: { aliases?: string[]; filename_hints?: string[]; skip_9p: boolean }
): GuestDef => ({
  name,
  init: "systemd",
  shell: "/bin/bash",
  installer: "",
  default_backend: "cloudinit",
  default_ssh_user: "stoat",
  escalate: ["sudo", "-n"],
  capabilities: ["systemd"],
  aliases: extra.aliases ?? [],
  filename_hints: extra.filename_hints ?? [name],
  seed_packages: [],
  pkg,
  svc: systemdSvc,
  cmd: systemdCmd,
  backend: { cloudinit: { skip_9p: extra.skip_9p } }
})

const apt = {
  setup: "apt-get update",
  install: ["apt-get", "install", "-y"],
  env: { DEBIAN_FRONTEND: "noninteractive" },
  runtime_packages: { python3: "python3" }
}
const dnf = { setup: "", install: ["dnf", "install", "-y"], env: {}, runtime_packages: { python3: "python3" } }

/** The guest definitions shipped with Stoat. `tiny` is ours: the busybox + dropbear guest that boots in seconds. */
export const BUNDLED_GUESTS: ReadonlyArray<GuestDef> = [
  {
    name: "alpine",
    init: "openrc",
    shell: "/bin/ash",
    installer: "setup-alpine",
    default_backend: "apkovl",
    default_ssh_user: "root",
    escalate: ["sudo", "-n"],
    capabilities: ["openrc"],
    aliases: [],
    filename_hints: ["alpine"],
    seed_packages: ["sudo"],
    pkg: {
      setup: "i=0; until setup-apkrepos -c -1; do i=$((i+1)); [ $i -ge 30 ] && exit 1; sleep 2; done",
      install: ["apk", "--wait", "60", "add"],
      env: {},
      runtime_packages: { python3: "python3" }
    },
    svc: {
      enable: "rc-update add {name} default",
      start: "rc-service {name} start",
      stop: "rc-service {name} stop",
      restart: "rc-service {name} restart",
      status: "rc-service {name} status"
    },
    cmd: { download: "wget -O", useradd: "adduser -D {name}" },
    backend: {},
    log_path: "/var/log/messages"
  },
  systemdGuest("ubuntu", apt, { filename_hints: ["ubuntu", "noble", "jammy", "focal"], skip_9p: false }),
  systemdGuest("debian", apt, {
    aliases: ["debian-family"],
    filename_hints: ["debian", "trixie", "bookworm"],
    skip_9p: true
  }),
  systemdGuest("fedora", dnf, { aliases: ["rpm-family"], filename_hints: ["fedora"], skip_9p: false }),
  systemdGuest("almalinux", dnf, { aliases: ["rpm-family"], filename_hints: ["almalinux", "alma"], skip_9p: true }),
  systemdGuest("rocky", dnf, { aliases: ["rpm-family"], filename_hints: ["rocky"], skip_9p: true }),
  systemdGuest(
    "arch",
    {
      setup: "pacman -Sy --noconfirm",
      install: ["pacman", "-S", "--noconfirm", "--needed"],
      env: {},
      runtime_packages: { python3: "python" }
    },
    { filename_hints: ["arch"], skip_9p: false }
  ),
  systemdGuest(
    "opensuse",
    {
      setup: "zypper --non-interactive refresh",
      install: ["zypper", "--non-interactive", "install"],
      env: {},
      runtime_packages: { python3: "python313" }
    },
    { aliases: ["rpm-family"], filename_hints: ["opensuse", "leap"], skip_9p: true }
  ),
  {
    name: "tiny",
    init: "rc",
    shell: "/bin/sh",
    installer: "",
    default_backend: "direct",
    default_ssh_user: "root",
    escalate: [],
    capabilities: ["rc"],
    aliases: [],
    filename_hints: ["tiny"],
    seed_packages: [],
    pkg: { setup: "", install: [], env: {}, runtime_packages: {} },
    svc: { enable: "", start: "", stop: "", restart: "", status: "" },
    cmd: {},
    backend: {}
  }
]

const Template = Schema.String.pipe(
  Schema.filter((value) => !value.includes("'") || "templates must not contain single quotes")
)
const StringList = Schema.Array(Schema.String)
const StringMap = Schema.Record({ key: Schema.String, value: Schema.String })

const PkgTable = Schema.Struct({
  setup: Template,
  install: StringList,
  scaffold_install: Schema.optional(Schema.String),
  scaffold_setup: Schema.optional(Schema.String),
  runtime_packages: StringMap,
  env: Schema.optional(StringMap)
})
const SvcTable = Schema.Struct({
  enable: Template,
  start: Template,
  stop: Template,
  restart: Template,
  status: Template
})

/** guest.toml for a new guest: every required field; unknown keys are errors. */
export const GuestFile = Schema.Struct({
  schema: Schema.Literal(1),
  name: Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/)),
  init: Schema.Literal("systemd", "openrc", "rc"),
  shell: Schema.String,
  default_backend: Schema.Literal("apkovl", "cloudinit", "ssh", "direct"),
  default_ssh_user: Schema.String,
  escalate: StringList,
  capabilities: StringList,
  seed_packages: StringList,
  pkg: PkgTable,
  svc: SvcTable,
  installer: Schema.optional(Schema.String),
  aliases: Schema.optional(StringList),
  filename_hints: Schema.optional(StringList),
  log_path: Schema.optional(Schema.String),
  cmd: Schema.optional(Schema.Struct({ download: Schema.optional(Template), useradd: Schema.optional(Template) })),
  backend: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Json }) })
  )
})
/** A user file whose name matches a bundled guest overrides only what it sets. */
const GuestOverride = Schema.partial(GuestFile.pipe(Schema.omit("name"))).pipe(
  Schema.extend(Schema.Struct({ name: Schema.String }))
)

const decodeOptions = { onExcessProperty: "error", errors: "first" } as const

const issueText = (error: ParseResult.ParseError): string => {
  const first = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  if (!first) return "invalid"
  const key = first.path.map(String).join(".")
  return key === "" ? first.message : `${key}: ${first.message}`
}

/** Validates and merges one user guest file over the bundled set. */
export const loadGuestFile = (
  file: string,
  text: string,
  bundled: ReadonlyMap<string, GuestDef>
): Either.Either<{ guest: GuestDef; merged: boolean }, InvalidSpec> => {
  const fail = (why: string) => Either.left(new InvalidSpec({ message: `${file}: ${why}`, subject: file }))
  let raw: Record<string, unknown>
  try {
    raw = parse(text) as Record<string, unknown>
  } catch (error) {
    return fail((error as Error).message.split("\n")[0] ?? "invalid TOML")
  }
  const base = typeof raw["name"] === "string" ? bundled.get(raw["name"]) : undefined
  if (base) {
    const decoded = Schema.decodeUnknownEither(GuestOverride, decodeOptions)(raw)
    if (Either.isLeft(decoded)) return fail(issueText(decoded.left))
    return Either.right({ guest: mergeGuest(base, decoded.right), merged: true })
  }
  const decoded = Schema.decodeUnknownEither(GuestFile, decodeOptions)(raw)
  if (Either.isLeft(decoded)) return fail(issueText(decoded.left))
  const guest = fromFile(decoded.right)
  const otherInit = guest.capabilities.find((c) => ["systemd", "openrc", "rc"].includes(c) && c !== guest.init)
  if (otherInit) return fail(`capabilities: names init ${otherInit} but init is ${guest.init}`)
  return Either.right({ guest, merged: false })
}

type GuestFileType = typeof GuestFile.Type

const withInit = (capabilities: ReadonlyArray<string>, init: string): string[] =>
  capabilities.includes(init) ? [...capabilities] : [...capabilities, init]

const fromFile = (file: GuestFileType): GuestDef => ({
  name: file.name,
  init: file.init,
  shell: file.shell,
  installer: file.installer ?? "",
  default_backend: file.default_backend,
  default_ssh_user: file.default_ssh_user,
  escalate: file.escalate,
  capabilities: withInit(file.capabilities, file.init),
  aliases: file.aliases ?? [],
  filename_hints: file.filename_hints ?? [],
  seed_packages: file.seed_packages,
  pkg: {
    setup: file.pkg.setup,
    install: file.pkg.install,
    env: file.pkg.env ?? {},
    runtime_packages: file.pkg.runtime_packages
  },
  svc: file.svc,
  cmd: Object.fromEntries(
    Object.entries(file.cmd ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined)
  ),
  backend: file.backend ?? {},
  ...(file.log_path !== undefined ? { log_path: file.log_path } : {})
})

const mergeGuest = (base: GuestDef, over: typeof GuestOverride.Type): GuestDef => {
  const init = over.init ?? base.init
  return {
    ...base,
    ...(over.init ? { init } : {}),
    ...(over.shell !== undefined ? { shell: over.shell } : {}),
    ...(over.installer !== undefined ? { installer: over.installer } : {}),
    ...(over.default_backend ? { default_backend: over.default_backend } : {}),
    ...(over.default_ssh_user !== undefined ? { default_ssh_user: over.default_ssh_user } : {}),
    ...(over.escalate ? { escalate: over.escalate } : {}),
    capabilities: withInit(over.capabilities ?? base.capabilities.filter((c) => c !== base.init), init),
    ...(over.aliases ? { aliases: over.aliases } : {}),
    ...(over.filename_hints ? { filename_hints: over.filename_hints } : {}),
    ...(over.seed_packages ? { seed_packages: over.seed_packages } : {}),
    ...(over.pkg ? { pkg: { ...base.pkg, ...over.pkg, env: over.pkg.env ?? base.pkg.env } } : {}),
    ...(over.svc ? { svc: over.svc } : {}),
    ...(over.log_path !== undefined ? { log_path: over.log_path } : {}),
    ...(over.cmd ? { cmd: { ...base.cmd, ...(over.cmd as Record<string, string>) } } : {}),
    // A [backend.x] table replaces the bundled one whole.
    ...(over.backend ? { backend: { ...base.backend, ...over.backend } } : {})
  }
}

export interface LoadedGuests {
  readonly guests: ReadonlyArray<LoadedGuest>
  readonly byName: ReadonlyMap<string, LoadedGuest>
}

/** The guest definitions: the bundled ones, each overridden or extended by `<root>/guests/*.toml`. */
export class GuestDefinitions extends Context.Tag("stoat/GuestDefinitions")<
  GuestDefinitions,
  {
    readonly list: Effect.Effect<ReadonlyArray<LoadedGuest>, InvalidSpec | fs.FsError>
    readonly get: (name: string) => Effect.Effect<LoadedGuest, NotFound | InvalidSpec | fs.FsError>
  }
>() {}

const bundledMap = new Map(BUNDLED_GUESTS.map((guest) => [guest.name, guest]))
const bundledLoaded: ReadonlyArray<LoadedGuest> = BUNDLED_GUESTS.map((guest) => ({
  ...guest,
  source: "bundled" as const
})).sort(byName)

export const loadGuests = (dir: string): Effect.Effect<ReadonlyArray<LoadedGuest>, InvalidSpec | fs.FsError> =>
  Effect.gen(function* () {
    // Most data roots have no guests/ of their own, and every listing of VMs asks for these: one
    // look, not the error Node builds for listing a missing folder.
    if (!existsSync(dir)) return bundledLoaded
    const files = (yield* fs.listDirectory(dir)).filter((name) => name.endsWith(".toml")).sort()
    if (files.length === 0) return bundledLoaded
    const result = new Map<string, LoadedGuest>(bundledLoaded.map((guest) => [guest.name, guest]))
    for (const file of files) {
      const path = join(dir, file)
      const text = yield* fs.readFileString(path)
      const loaded = loadGuestFile(path, text, bundledMap)
      if (Either.isLeft(loaded)) return yield* loaded.left
      result.set(loaded.right.guest.name, {
        ...loaded.right.guest,
        source: loaded.right.merged ? "bundled+user" : "user"
      })
    }
    return [...result.values()].sort(byName)
  })

export const GuestDefinitionsLive = Layer.effect(
  GuestDefinitions,
  Effect.map(DataRoot, (root) => {
    const list = loadGuests(root.guests)
    return {
      list,
      get: (name: string) =>
        Effect.flatMap(list, (guests) => {
          const found = guests.find((guest) => guest.name === name || guest.aliases.includes(name))
          if (found) return Effect.succeed(found)
          const hint = closest(
            name,
            guests.map((guest) => guest.name)
          )
          return Effect.fail(
            new NotFound({
              message: `no guest "${name}"${hint ? ` (did you mean "${hint}"?)` : ""}`,
              subject: name,
              hint: adviseLookup("guest.list")
            })
          )
        })
    }
  })
)
