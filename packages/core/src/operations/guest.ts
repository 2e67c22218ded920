import { Effect, Schema } from "effect"
import {
  CliExecResult,
  CommandResult,
  DirEntry,
  DirListing,
  ExecResult,
  FileContent,
  ProcessList,
  SvcStatus,
  TailLines,
  WriteFileResult
} from "@stoat/wire"
import { Usage } from "../errors.js"
import { GUEST_CAPS, GuestOps } from "../guest/ops.js"
import { guestSession, type GuestSession } from "../guest/session.js"
import { EnvName, GuestPath, VmName } from "./inputs.js"
import { IntRange } from "../vm/limits.js"
import { defineOperation, EXEC, READ } from "./operation.js"

/** Service, unit and user names (reference §5 Guards): never an option, never shell syntax. */
const GuestName = (what: string) =>
  Schema.String.pipe(
    Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._@-]*$/, {
      message: () => `${what} names start with a letter or digit and use letters, digits, '.', '_', '@' and '-'`
    }),
    Schema.maxLength(256)
  ).annotations({ description: `${what[0]!.toUpperCase()}${what.slice(1)} name` })
const PackageName = Schema.String.pipe(
  Schema.pattern(/^[^\s\0-][^\s\0]*$/, {
    message: () => "package names are non-empty, have no spaces and do not start with '-'"
  }),
  Schema.maxLength(256)
)
const Mode = Schema.String.pipe(
  Schema.pattern(/^0?[0-7]{3}$/, { message: () => "mode is octal permission bits such as 0644" })
)
/** The bytes one write_file (or exec's stdin) may carry: enough for configs and scripts; bigger files go through copy_to. */
export const MAX_WRITE_BYTES = 16 * 1024 * 1024
/** write_file's content as sent: the cap's bytes as base64 (text is checked in bytes once decoded). */
const MAX_CONTENT_CHARS = Math.ceil(MAX_WRITE_BYTES / 3) * 4
const overTheCap = (size: string) =>
  `is ${size}; the cap is ${MAX_WRITE_BYTES} bytes (16 MiB) per call (use copy_to for bigger files)`
/** A payload field: over its cap the error names its size and the limit, never the payload. */
const Payload = (maxChars: number) =>
  Schema.String.pipe(
    Schema.maxLength(maxChars, {
      // The annotation also words a value that is no string at all (null): say that, not a size.
      message: (issue) =>
        typeof issue.actual === "string" ? overTheCap(`${issue.actual.length} characters`) : "must be a string"
    })
  )
/** Padded base64 (checked without a repeated group, which overflows the regexp stack on megabytes). */
const isBase64 = (text: string) =>
  text.length % 4 === 0 && /^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)

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
    "Run argv in a running VM over SSH (an argument array, not a shell string); returns stdout, stderr and exit_code. At timeout_seconds it returns the output so far with timed_out=true: run longer work with exec_bg. Streams are capped at 1 MiB (truncated=true); non-UTF-8 output comes as <stream>_base64.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    argv: Schema.NonEmptyArray(Schema.String.pipe(Schema.maxLength(128 * 1024)))
      .pipe(Schema.maxItems(4096))
      .annotations({ description: 'Command and arguments, e.g. ["sh","-c","..."]; at most 4096 words of 128 KiB' }),
    stdin: Schema.optional(Payload(MAX_WRITE_BYTES)).annotations({
      description: "Text fed to the command's stdin (max 16 MiB; default none)"
    }),
    cwd: Schema.optional(GuestPath).annotations({
      description: "Absolute working folder (default the ssh user's home)"
    }),
    env: Schema.optional(Schema.Record({ key: EnvName, value: Schema.String })).annotations({
      description: "Extra environment variables, {NAME: value}"
    }),
    timeout_seconds: Schema.optional(IntRange(1, GUEST_CAPS.execTimeoutSeconds)).annotations({
      description: `Seconds before it stops (default 60, max ${GUEST_CAPS.execTimeoutSeconds})`
    })
  }),
  output: ExecResult,
  cliView: (result, { vm }): typeof CliExecResult.Type => ({ vm, ...result }),
  annotations: EXEC,
  touches: ["guest"],
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
    'Read a file of a running VM as the ssh user: content (UTF-8, or base64 with encoding="base64"), the file\'s size, and truncated=true when more follows (read on from a larger offset). Missing: not_found; unreadable: access_denied.',
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    path: GuestPath,
    offset: Schema.optional(Schema.NonNegativeInt).annotations({ description: "Byte offset to read from (default 0)" }),
    max_bytes: Schema.optional(IntRange(0, GUEST_CAPS.readBytes)).annotations({
      description: "Bytes to read (default and max 1 MiB; 0 = max)"
    })
  }),
  output: FileContent,
  annotations: READ,
  access: "observe",
  run: (input) =>
    inGuest(input.vm, (ops, session) =>
      ops.readFile(session, {
        path: input.path,
        ...(input.offset !== undefined ? { offset: input.offset } : {}),
        ...(input.max_bytes !== undefined ? { maxBytes: input.max_bytes } : {})
      })
    )
})

export const writeFileOp = defineOperation({
  key: "guest.write_file",
  tool: "write_file",
  expose: { cli: "file write", mcp: true },
  title: "Write a file in a VM",
  description:
    "Write a file in a running VM as the guest's ssh user (the file is that user's). Returns {path, bytes, mode}. Missing folder: not_found; not writable: access_denied. At most 16 MiB per call; for larger files use copy_to.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    path: GuestPath,
    content: Payload(MAX_CONTENT_CHARS).annotations({
      description: "Text to write (max 16 MiB), or base64 with encoding"
    }),
    encoding: Schema.optional(Schema.Literal("base64")).annotations({
      description: "base64 when content encodes binary bytes (default text)"
    }),
    mode: Schema.optional(Mode).annotations({ description: "Octal permission bits (default 0644)" }),
    append: Schema.optional(Schema.Boolean).annotations({ description: "Append instead of replacing (default false)" }),
    parents: Schema.optional(Schema.Boolean).annotations({
      description: "Create missing parent folders (default false)"
    }),
    as_root: Schema.optional(Schema.Boolean).annotations({
      description: "Write as root through sudo -n; needs agent_access exec (default false)"
    })
  }),
  output: WriteFileResult,
  annotations: EXEC,
  touches: ["guest"],
  access: (input) => (input.as_root === true ? "exec" : "manage"),
  run: (input) => {
    if (input.encoding === "base64" && !isBase64(input.content))
      return Effect.fail(
        new Usage({
          message: 'invalid input for write_file: content is not base64 (encoding="base64")',
          subject: input.path
        })
      )
    const content = Buffer.from(input.content, input.encoding === "base64" ? "base64" : "utf8")
    if (content.length > MAX_WRITE_BYTES)
      return Effect.fail(
        new Usage({
          message: `invalid input for write_file: content ${overTheCap(`${content.length} bytes`)}`,
          subject: input.path
        })
      )
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
    "List a folder of a running VM as the ssh user: each entry's basename, type, size, octal mode, mtime (RFC 3339) and owner; hidden entries included, symlinks not followed. At most 2000 entries (truncated=true).",
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
    "Describe one path of a running VM (a symlink itself): name, type, size, octal mode, mtime (RFC 3339) and owner. Missing: not_found.",
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
    "The processes of a running VM: pid, ppid, user, elapsed and command. At most 2000 rows (truncated=true).",
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
    "A service's status in a running VM (systemctl / rc-service status): stdout, stderr, exit_code, active and enabled. No service manager: capability_unavailable.",
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
    "Enable, start, stop or restart a service of a running VM as root, with the guest definition's templates. A non-zero exit_code is the service manager's answer (see stderr); no service manager: capability_unavailable.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    name: ServiceName,
    action: Schema.Literal("enable", "start", "stop", "restart").annotations({
      description: "What to do with the service"
    })
  }),
  output: CommandResult,
  annotations: EXEC,
  touches: ["guest"],
  access: "manage",
  run: (input) => inGuest(input.vm, (ops, session) => ops.svc(session, input.name, input.action))
})

export const tailLogOp = defineOperation({
  key: "guest.tail_log",
  tool: "tail_log",
  expose: { cli: "tail", mcp: true },
  title: "Tail a log in a VM",
  description:
    "The last lines of a log in a running VM: a systemd unit's journal (as root), an absolute file (as the ssh user), or with neither the guest's system log (as root). Give unit or path, not both.",
  kind: "query",
  input: Schema.Struct({
    vm: VmName,
    unit: Schema.optional(GuestName("unit")).annotations({ description: "systemd unit whose journal to read" }),
    path: Schema.optional(GuestPath).annotations({ description: "Absolute log file to read" }),
    lines: Schema.optional(IntRange(1, GUEST_CAPS.tailLines)).annotations({
      description: `Lines (default 50, max ${GUEST_CAPS.tailLines})`
    })
  }),
  output: TailLines,
  annotations: READ,
  access: "observe",
  run: (input) =>
    inGuest(input.vm, (ops, session) =>
      ops.tailLog(session, {
        lines: input.lines ?? 50,
        ...(input.unit !== undefined ? { unit: input.unit } : {}),
        ...(input.path !== undefined ? { path: input.path } : {})
      })
    )
})

export const pkgInstallOp = defineOperation({
  key: "guest.pkg_install",
  tool: "pkg_install",
  longRunning: true,
  expose: { cli: "pkg install", mcp: true },
  title: "Install packages in a VM",
  description:
    "Install packages in a running VM as root with the guest definition's package manager (e.g. apt-get update, then install -y); returns stdout, stderr and exit_code. Can take minutes. No package manager: capability_unavailable.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    packages: Schema.NonEmptyArray(PackageName)
      .pipe(Schema.maxItems(200))
      .annotations({ description: "Package names, not options (1..200)" })
  }),
  output: CommandResult,
  annotations: EXEC,
  touches: ["guest"],
  access: "manage",
  run: (input) => inGuest(input.vm, (ops, session) => ops.pkgInstall(session, input.packages))
})

export const useraddOp = defineOperation({
  key: "guest.useradd",
  tool: "useradd",
  expose: { cli: "user add", mcp: true },
  title: "Add a user in a VM",
  description:
    "Add a user to a running VM as root with the guest definition's useradd command; returns stdout, stderr and exit_code (non-zero when the user exists).",
  kind: "command",
  input: Schema.Struct({ vm: VmName, name: GuestName("user") }),
  output: CommandResult,
  annotations: EXEC,
  touches: ["guest"],
  access: "manage",
  run: (input) => inGuest(input.vm, (ops, session) => ops.useradd(session, input.name))
})

/** The guest tools of reference §5, in its order. */
export const guestOperations = [
  readFileOp,
  listDirOp,
  statOp,
  psOp,
  svcStatusOp,
  tailLogOp,
  writeFileOp,
  pkgInstallOp,
  svcOp,
  useraddOp
] as const
