import { Either, ParseResult, Schema } from "effect"
import { parse, stringify } from "smol-toml"
import { AccessLevel } from "../context/access-policy.js"

const Port = Schema.Int.pipe(Schema.between(1, 65535))
const Datetime = Schema.Union(Schema.String, Schema.DateFromSelf).pipe(
  Schema.transform(Schema.String, {
    strict: true,
    decode: (value) => (typeof value === "string" ? value : value.toISOString()),
    encode: (value) => value
  })
)
const withDefault = <A, I>(schema: Schema.Schema<A, I>, value: () => NoInfer<A>) =>
  Schema.optionalWith(schema, { default: value, exact: true })

const notAbsolute = {
  message: (issue: ParseResult.ParseIssue) =>
    `must be an absolute size like 8G, 512M or 20480M, got ${JSON.stringify(issue.actual)}`
}

/** A disk size: an absolute count of bytes with an optional K/M/G/T suffix. Relative sizes (`+8G`) are refused. */
export const DiskSize = Schema.String.pipe(Schema.pattern(/^[1-9][0-9]*[KMGT]?$/, notAbsolute))

/** A disk size as a caller gives it: the suffix in either case (`8g`, as qemu-img takes it), stored upper-case. */
export const DiskSizeInput = Schema.String.pipe(
  Schema.pattern(/^[1-9][0-9]*[KMGTkmgt]?$/, notAbsolute),
  // Out of range is bad input (usage from a command or tool, invalid_spec in stoat.toml), refused before any handler.
  Schema.filter((size) => outOfRange(size.toUpperCase()) ?? true),
  Schema.transform(DiskSize, { strict: true, decode: (size) => size.toUpperCase(), encode: (size) => size })
)

/** Bytes in a disk size such as "8G" (0 for text that is not a size). */
export const diskSizeBytes = (size: string): number => {
  const match = /^(\d+)([KMGT]?)$/.exec(size)
  return match ? Number(match[1]) * 1024 ** " KMGT".indexOf(match[2] || " ") : 0
}

/** The disk sizes create and update accept: below 64M no guest fits; qcow2 stops at 64T. */
export const DISK_RANGE = { min: "64M", max: "64T" } as const

/** "must be 64M..64T, got …" for a disk size out of range, or undefined when it is fine. */
const outOfRange = (size: string): string | undefined => {
  const bytes = diskSizeBytes(size)
  if (bytes >= diskSizeBytes(DISK_RANGE.min) && bytes <= diskSizeBytes(DISK_RANGE.max)) return undefined
  const unitless = /^\d+$/.test(size) ? ` (${size} bytes; give a unit: K, M, G or T)` : ""
  return `must be ${DISK_RANGE.min}..${DISK_RANGE.max}, got ${size}${unitless}`
}

/** Why a requested disk size is out of range (`invalid_spec`), or undefined when it is fine. */
export const diskSizeProblem = (size: string): string | undefined => {
  const problem = outOfRange(size)
  return problem === undefined ? undefined : `disk ${problem}`
}

const Applied = Schema.Struct({
  version: withDefault(Schema.String, () => ""),
  hash: withDefault(Schema.String, () => ""),
  script_hash: withDefault(Schema.String, () => ""),
  at: withDefault(Datetime, () => ""),
  health: withDefault(Schema.Literal("ok", "failed", "unknown"), () => "unknown" as const),
  outputs: withDefault(Schema.Record({ key: Schema.String, value: Schema.String }), () => ({}))
})

/** A libvirt connection URI Stoat accepts as a VM's host: qemu over the local socket, ssh, tcp or tls, to a system or session daemon. */
export const LIBVIRT_URI = /^qemu(\+(ssh|tcp|tls|unix))?:\/\/[^\s'"]*\/(system|session)(\?[^\s'"]*)?$/

/** `vm.toml`, the authoritative record of one VM; the folder name is the VM's identity. */
export const VmFile = Schema.Struct({
  name: withDefault(Schema.String, () => ""),
  mode: withDefault(Schema.Literal("live", "disk", "cloud"), () => "disk" as const),
  os: withDefault(Schema.String, () => ""),
  /** Catalog id or file the VM was created from (ours; the original kept only iso/base). */
  image: withDefault(Schema.String, () => ""),
  iso: withDefault(Schema.String, () => ""),
  ram: withDefault(Schema.Int.pipe(Schema.greaterThanOrEqualTo(256)), () => 4096),
  cpus: withDefault(Schema.Int.pipe(Schema.greaterThanOrEqualTo(1)), () => 4),
  cpu_model: Schema.optionalWith(Schema.String, { exact: true }),
  required_cpu: Schema.optionalWith(Schema.String, { exact: true }),
  disk: withDefault(DiskSize, () => "8G"),
  installed: withDefault(Schema.Boolean, () => false),
  share: withDefault(Schema.String, () => ""),
  sshport: Port,
  recipes: withDefault(Schema.Array(Schema.String), () => []),
  display: withDefault(Schema.Literal("", "auto", "window", "vnc"), () => "" as const),
  backend: withDefault(Schema.String, () => ""),
  /** Which Hypervisor runs the VM: "" or qemu (the default), or libvirt. */
  provider: withDefault(Schema.String, () => ""),
  /** For provider libvirt: the libvirt URI of the host (qemu:///system when empty, or qemu+ssh://user@host/system). */
  host: Schema.optionalWith(Schema.String, { exact: true }),
  base: withDefault(Schema.String, () => ""),
  sshuser: withDefault(Schema.String, () => ""),
  console_password: withDefault(Schema.String, () => ""),
  allow_exec: Schema.optionalWith(Schema.Boolean, { exact: true }),
  agent_access: Schema.optionalWith(AccessLevel, { exact: true }),
  project: withDefault(Schema.String, () => ""),
  key: withDefault(Schema.String, () => ""),
  forwards: withDefault(Schema.Array(Schema.Struct({ hostport: Port, guestport: Port })), () => []),
  shares: withDefault(
    Schema.Array(Schema.Struct({ tag: Schema.String, host: Schema.String, guest: Schema.String })),
    () => []
  ),
  params: withDefault(
    Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.String }) }),
    () => ({})
  ),
  applied: withDefault(Schema.Record({ key: Schema.String, value: Applied }), () => ({}))
})
export type VmConfig = typeof VmFile.Type

const KNOWN_KEYS = new Set(Object.keys(VmFile.fields))

/** The effective access level: an explicit `agent_access`, else `exec` when `allow_exec = true` was written, else `manage`. */
export const effectiveAccess = (config: VmConfig): AccessLevel =>
  config.agent_access ?? (config.allow_exec === true ? "exec" : "manage")

/**
 * The account stoat logs in as, seeds and shows: vm.toml's `sshuser`, empty meaning root (as the
 * original's vm.toml). Templates write it at create (`stoat` for cloud images, `root` otherwise).
 */
export const sshUserOf = (config: Pick<VmConfig, "sshuser">): string =>
  config.sshuser === "" ? "root" : config.sshuser

export interface ParsedVm {
  readonly config: VmConfig
  readonly unknownKeys: ReadonlyArray<string>
}

/** Parses vm.toml text. Left = why it is broken (the message names the key). */
export const parseVmToml = (text: string): Either.Either<ParsedVm, string> => {
  let raw: Record<string, unknown>
  try {
    raw = parse(text) as Record<string, unknown>
  } catch (error) {
    return Either.left(`vm.toml: ${(error as Error).message.split("\n")[0]}`)
  }
  const decoded = Schema.decodeUnknownEither(VmFile, { onExcessProperty: "ignore", errors: "first" })(raw)
  if (Either.isLeft(decoded)) return Either.left(`vm.toml: ${describeIssue(decoded.left)}`)
  return Either.right({ config: decoded.right, unknownKeys: Object.keys(raw).filter((key) => !KNOWN_KEYS.has(key)) })
}

/** "key: problem" for the first issue, so a broken VM names the field to fix. */
const describeIssue = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const first = issues[0]
  if (!first) return "invalid"
  const key = first.path.map(String).join(".")
  return key === "" ? first.message : `${key}: ${first.message.replace(/^Expected /, "expected ")}`
}

/** Recovers a broken file's ssh port so it stays reserved. */
export const salvageSshPort = (text: string): number | undefined => {
  const match = /^\s*sshport\s*=\s*(\d+)/m.exec(text)
  const port = match ? Number(match[1]) : NaN
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : undefined
}

/** Renders vm.toml; `[applied]` tables come last under a do-not-edit comment. */
export const renderVmToml = (config: VmConfig): string => {
  const encoded = Schema.encodeSync(VmFile)(config) as Record<string, unknown>
  const { applied, params, forwards, shares, ...scalars } = encoded
  const body: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(scalars)) if (value !== undefined) body[key] = value
  if (Array.isArray(forwards) && forwards.length > 0) body["forwards"] = forwards
  if (Array.isArray(shares) && shares.length > 0) body["shares"] = shares
  if (params && Object.keys(params).length > 0) body["params"] = params
  let text = stringify(body)
  if (applied && Object.keys(applied).length > 0) {
    const withDates = Object.fromEntries(
      Object.entries(applied as Record<string, Record<string, unknown>>).map(([name, entry]) => [
        name,
        { ...entry, ...(typeof entry["at"] === "string" && entry["at"] !== "" ? { at: new Date(entry["at"]) } : {}) }
      ])
    )
    text += `\n# written by stoat; do not edit\n${stringify({ applied: withDates })}`
  }
  return text.endsWith("\n") ? text : `${text}\n`
}

export const defaultVmConfig = (fields: Partial<VmConfig> & { readonly sshport: number }): VmConfig =>
  Schema.decodeUnknownSync(VmFile)(fields)
