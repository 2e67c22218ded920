import { Effect, Schema } from "effect"
import { CliExecResult, CommandResult, DirEntry, DirListing, ExecResult, FileContent, ProcessList, SvcStatus, TailLines, WriteFileResult } from "@stoat/wire"
import { Usage } from "../errors.js"
import { GUEST_CAPS, GuestOps } from "../guest/ops.js"
import { guestSession, type GuestSession } from "../guest/session.js"
import { EnvName, GuestPath, IntRange, VmName } from "./inputs.js"
import { defineOperation, EXEC, READ } from "./operation.js"

/** Service, unit and user names (reference §5 Guards): never an option, never shell syntax. */
const GuestName = (what: string) =>
  Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._@-]*$/, { message: () => `${what} names start with a letter or digit and use letters, digits, '.', '_', '@' and '-'` }),
    Schema.maxLength(256)
  ).annotations({ description: `${what} name` })
const PackageName = Schema.String.pipe(
  Schema.pattern(/^[^\s\0-][^\s\0]*$/, { message: () => "package names are non-empty, have no spaces and do not start with '-'" }),
  Schema.maxLength(256)
)
const Mode = Schema.String.pipe(Schema.pattern(/^0?[0-7]{3}$/, { message: () => "mode is octal permission bits such as 0644" }))
/** The bytes one write_file (or exec's stdin) may carry: enough for configs and scripts; bigger files go through copy_to. */
export const MAX_WRITE_BYTES = 16 * 1024 * 1024
/** write_file's content as sent: the cap's bytes as base64 (text is checked in bytes once decoded). */
const MAX_CONTENT_CHARS = Math.ceil(MAX_WRITE_BYTES / 3) * 4
const overTheCap = (size: string) => `is ${size}; the cap is ${MAX_WRITE_BYTES} bytes (16 MiB) per call (use copy_to for bigger files)`
/** A payload field: over its cap the error names its size and the limit, never the payload. */
const Payload = (maxChars: number) =>
  Schema.String.pipe(
    Schema.maxLength(maxChars, {
      // The annotation also words a value that is no string at all (null): say that, not a size.
      message: (issue) => (typeof issue.actual === "string" ? overTheCap(`${issue.actual.length} characters`) : "must be a string")
    })
  )
/** Padded base64 (checked without a repeated group, which overflows the regexp stack on megabytes). */
const isBase64 = (text: string) => text.length % 4 === 0 && /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)

/** Resolves the running VM and hands its session to one GuestOps call. */
const inGuest = <A, E, R>(vm: string, use: (ops: GuestOps["Type"], session: GuestSession) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.zip(GuestOps, guestSession(vm)), ([ops, session]) => use(ops, session))

export const execInGuest = defineOperation({
  key: "guest.exec",
  tool: "exec",
  longRunning: true,
  expose: { cli: "exec", mcp: true },
  title: "Run a command in a VM",
  description:
    "Run argv (an argument array, not a shell string: use [\"sh\",\"-c\",\"...\"] for shell syntax) in a running VM over SSH; returns stdout, stderr and exit_code. stdin, cwd (absolute) and env are optional. Stops after timeout_seconds (default 60, max 600) and returns the output so far with timed_out=true: start anything longer with exec_bg and poll it. Each stream is capped at 1 MiB (truncated=true); a stream that is not UTF-8 comes as <stream>_base64. Call wait after start before using it.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    argv: Schema.NonEmptyArray(Schema.String.pipe(Schema.maxLength(128 * 1024))).pipe(Schema.maxItems(4096)),
    stdin: Schema.optional(Payload(MAX_WRITE_BYTES)),
    cwd: Schema.optional(GuestPath),
    env: Schema.optional(Schema.Record({ key: EnvName, value: Schema.String })),
    timeout_seconds: Schema.optional(IntRange(1, GUEST_CAPS.execTimeoutSeconds))
  }),
  output: ExecResult,
  cliView: (result, { vm }): typeof CliExecResult.Type => ({ vm, ...result }),
  annotations: EXEC,
  access: "exec",
  run: (input) =>
    inGuest(input.vm, (ops, session) =>
      ops.exec(session, {
        argv: input.argv,
        timeoutSeconds: input.timeout_seconds ?? 60,
        ...(input.stdin !== undefined ? { stdin: input.stdin } : {}),
        ...(input.cwd !== undefined ? { cwd: input.cwd } : {}),
        ...(input.env !== undefined ? { env: input.env } : {})
      })
    )
})

export const readFileOp = defineOperation({
  key: "guest.read_file",
  tool: "read_file",
  expose: { cli: "file read", mcp: true },
  title: "Read a file in a VM",
  description:
    "Read a file of a running VM as the guest's ssh user. path is absolute; offset (bytes, default 0) and max_bytes (default and cap 1 MiB; 0 = the cap) select a range. Returns content (UTF-8 text, or base64 with encoding=\"base64\" when the bytes are not UTF-8), the file's size, and truncated=true when more follows the returned range (read on with a larger offset). Missing path: not_found; unreadable: access_denied.",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    path: GuestPath,
    offset: Schema.optional(IntRange(0, Number.MAX_SAFE_INTEGER)),
    max_bytes: Schema.optional(IntRange(0, GUEST_CAPS.readBytes))
  }),
  output: FileContent,
  annotations: READ,
  access: "observe",
  run: (input) =>
    inGuest(input.vm, (ops, session) =>
      ops.readFile(session, { path: input.path, ...(input.offset !== undefined ? { offset: input.offset } : {}), ...(input.max_bytes !== undefined ? { maxBytes: input.max_bytes } : {}) })
    )
})

export const writeFileOp = defineOperation({
  key: "guest.write_file",
  tool: "write_file",
  expose: { cli: "file write", mcp: true },
  title: "Write a file in a VM",
  description:
    "Write content to an absolute path in a running VM, as the guest's ssh user (the file belongs to that user). mode is octal permission bits (default 0644, set on the file after writing); append=true appends; parents=true creates missing parent folders; encoding=\"base64\" when content is base64 of binary bytes. as_root=true writes as root through the guest's escalation (sudo -n) and needs agent_access exec. Returns {path, bytes, mode}. Missing folder: not_found; not writable: access_denied. At most 16 MiB per call; for larger files use copy_to.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    path: GuestPath,
    content: Payload(MAX_CONTENT_CHARS),
    encoding: Schema.optional(Schema.Literal("base64")),
    mode: Schema.optional(Mode),
    append: Schema.optional(Schema.Boolean),
    parents: Schema.optional(Schema.Boolean),
    as_root: Schema.optional(Schema.Boolean)
  }),
  output: WriteFileResult,
  annotations: EXEC,
  access: (input) => (input.as_root === true ? "exec" : "manage"),
  run: (input) => {
    if (input.encoding === "base64" && !isBase64(input.content))
      return Effect.fail(new Usage({ message: "invalid input for write_file: content is not base64 (encoding=\"base64\")", subject: input.path }))
    const content = Buffer.from(input.content, input.encoding === "base64" ? "base64" : "utf8")
    if (content.length > MAX_WRITE_BYTES)
      return Effect.fail(new Usage({ message: `invalid input for write_file: content ${overTheCap(`${content.length} bytes`)}`, subject: input.path }))
    return inGuest(input.vm, (ops, session) =>
      ops.writeFile(session, {
        path: input.path,
        content,
        mode: input.mode ?? "0644",
        append: input.append === true,
        parents: input.parents === true,
        asRoot: input.as_root === true
      })
    )
  }
})

const PathInput = Schema.Struct({ vm: VmName, path: GuestPath })

export const listDirOp = defineOperation({
  key: "guest.list_dir",
  tool: "list_dir",
  expose: { cli: "file ls", mcp: true },
  title: "List a folder in a VM",
  description:
    "List the entries of an absolute folder path in a running VM, as the ssh user: each entry's basename, type (file, dir, symlink, fifo, socket, char, block), size in bytes, mode (octal, e.g. 0755), mtime (RFC 3339 UTC) and owner. Hidden entries included, symlinks not followed. At most 2000 entries, with truncated=true when there are more.",
  kind: "query",
  input: PathInput,
  output: DirListing,
  annotations: READ,
  access: "observe",
  run: (input) => inGuest(input.vm, (ops, session) => ops.listDir(session, input.path))
})

export const statOp = defineOperation({
  key: "guest.stat",
  tool: "stat",
  expose: { cli: "file stat", mcp: true },
  title: "Stat a path in a VM",
  description:
    "Describe one absolute path in a running VM (a symlink itself, not its target): name (basename), type, size, mode (octal), mtime (RFC 3339 UTC) and owner. Missing path: not_found.",
  kind: "query",
  input: PathInput,
  output: DirEntry,
  annotations: READ,
  access: "observe",
  run: (input) => inGuest(input.vm, (ops, session) => ops.stat(session, input.path))
})

export const psOp = defineOperation({
  key: "guest.ps",
  tool: "ps",
  expose: { cli: "ps", mcp: true },
  title: "List processes in a VM",
  description:
    "List the processes of a running VM: pid, ppid, user, elapsed (when the guest's ps reports it) and command line. At most 2000 rows, with truncated=true when there are more.",
  kind: "query",
  input: Schema.Struct({ vm: VmName }),
  output: ProcessList,
  annotations: READ,
  access: "observe",
  run: (input) => inGuest(input.vm, (ops, session) => ops.ps(session))
})

const ServiceName = GuestName("service")

export const svcStatusOp = defineOperation({
  key: "guest.svc_status",
  tool: "svc_status",
  expose: { cli: "svc", mcp: true },
  title: "Show a service's status in a VM",
  description:
    "Run the guest definition's service status command (systemctl status / rc-service status) for a service of a running VM. Returns its stdout, stderr and exit_code, plus active (running now) and enabled (starts at boot). A guest without a service manager answers capability_unavailable.",
  kind: "query",
  input: Schema.Struct({ vm: VmName, name: ServiceName }),
  output: SvcStatus,
  annotations: READ,
  access: "observe",
  run: (input) => inGuest(input.vm, (ops, session) => ops.svcStatus(session, input.name))
})

export const svcOp = defineOperation({
  key: "guest.svc",
  tool: "svc",
  expose: { cli: "svc", mcp: true },
  title: "Enable, start, stop or restart a service in a VM",
  description:
    "Enable, start, stop or restart a service of a running VM with the guest definition's service templates, as root (through sudo -n when the ssh user is not root). Returns the command's stdout, stderr and exit_code; a non-zero exit_code is the service manager's answer (read stderr). A guest without a service manager answers capability_unavailable.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, name: ServiceName, action: Schema.Literal("enable", "start", "stop", "restart") }),
  output: CommandResult,
  annotations: EXEC,
  access: "manage",
  run: (input) => inGuest(input.vm, (ops, session) => ops.svc(session, input.name, input.action))
})

export const tailLogOp = defineOperation({
  key: "guest.tail_log",
  tool: "tail_log",
  expose: { cli: "tail", mcp: true },
  title: "Tail a log in a VM",
  description:
    "The last lines (default 50, max 2000) of a log in a running VM. unit: that systemd unit's journal (journalctl, as root; systemd guests only). path: an absolute file, read as the ssh user. Neither: the guest's system log (its definition's log_path, or the whole journal on systemd), as root. Give unit or path, not both.",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    unit: Schema.optional(GuestName("unit")),
    path: Schema.optional(GuestPath),
    lines: Schema.optional(IntRange(1, GUEST_CAPS.tailLines))
  }),
  output: TailLines,
  annotations: READ,
  access: "observe",
  run: (input) =>
    inGuest(input.vm, (ops, session) =>
      ops.tailLog(session, { lines: input.lines ?? 50, ...(input.unit !== undefined ? { unit: input.unit } : {}), ...(input.path !== undefined ? { path: input.path } : {}) })
    )
})

export const pkgInstallOp = defineOperation({
  key: "guest.pkg_install",
  tool: "pkg_install",
  longRunning: true,
  expose: { cli: "pkg install", mcp: true },
  title: "Install packages in a VM",
  description:
    "Install packages in a running VM with the guest definition's package manager (e.g. apt-get update, then apt-get install -y), as root. packages are plain names (not options). Returns the combined stdout, stderr and the install's exit_code. Can take minutes on a slow guest. A guest without a package manager answers capability_unavailable.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, packages: Schema.NonEmptyArray(PackageName).pipe(Schema.maxItems(200)) }),
  output: CommandResult,
  annotations: EXEC,
  access: "manage",
  run: (input) => inGuest(input.vm, (ops, session) => ops.pkgInstall(session, input.packages))
})

export const useraddOp = defineOperation({
  key: "guest.useradd",
  tool: "useradd",
  expose: { cli: "user add", mcp: true },
  title: "Add a user in a VM",
  description:
    "Add a user to a running VM with the guest definition's useradd command (e.g. useradd -m -s /bin/bash NAME), as root. Returns stdout, stderr and exit_code (non-zero when the user exists). A guest that defines no useradd command answers capability_unavailable.",
  kind: "command",
  input: Schema.Struct({ vm: VmName, name: GuestName("user") }),
  output: CommandResult,
  annotations: EXEC,
  access: "manage",
  run: (input) => inGuest(input.vm, (ops, session) => ops.useradd(session, input.name))
})

/** The guest tools of reference §5, in its order. */
export const guestOperations = [readFileOp, listDirOp, statOp, psOp, svcStatusOp, tailLogOp, writeFileOp, pkgInstallOp, svcOp, useraddOp] as const
