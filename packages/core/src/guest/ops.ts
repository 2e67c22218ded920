import { posix } from "node:path"
import { Clock, Context, Effect, Layer } from "effect"
import type {
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
import { AccessDenied, CannotReach, CapabilityUnavailable, Internal, NotFound, Timeout, Usage } from "../errors.js"
import { GuestTransport, type ExecOptions, type ExecOutput } from "../ports/guest-transport.js"
import { bytesField, lossyText, textOrBase64 } from "./encoding.js"
import {
  ENABLED_SCRIPTS,
  LIST_SCRIPT,
  PS_SCRIPT,
  READ_SCRIPT,
  script,
  STAT_SCRIPT,
  TAIL_SCRIPT,
  templateScript,
  TIMEOUT_SCRIPT,
  WRITE_SCRIPT
} from "./scripts.js"
import { asRoot } from "./root.js"
import type { GuestSession } from "./session.js"

const MiB = 1024 * 1024

/** The caps of the guest tools (reference §5): what a caller can get back from one call. */
export const GUEST_CAPS = {
  readBytes: MiB,
  execOutputBytes: MiB,
  execTimeoutSeconds: 600,
  listEntries: 2000,
  psRows: 2000,
  tailLines: 2000
} as const

/** How long a helper command (stat, ls, ps, tail, a service verb) may take before it is a `timeout`. */
const HELPER_TIMEOUT_MS = 60_000
/** Package setup + install on a slow guest (apt under TCG) takes minutes. */
const PACKAGE_TIMEOUT_MS = 600_000
/** Helpers' output is parsed, not returned whole: enough for a 2000-entry listing with long names. */
const HELPER_OUTPUT_BYTES = 16 * MiB
/** Exit statuses of a command a guest without setsid had its `timeout` stop: GNU's 124, or TERM/KILL as 128+n (busybox). */
const GUEST_TIMEOUT_EXITS = new Set([124, 128 + 9, 128 + 15])

export type GuestError = CannotReach | NotFound | AccessDenied | CapabilityUnavailable | Usage | Timeout | Internal

export interface ExecRequest {
  readonly argv: ReadonlyArray<string>
  readonly stdin?: string
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  readonly timeoutSeconds: number
}

export interface ReadRequest {
  readonly path: string
  readonly offset?: number
  /** 0 or absent: the cap. */
  readonly maxBytes?: number
}

export interface WriteRequest {
  readonly path: string
  readonly content: Uint8Array
  /** Octal permission bits as given (`0644` or `644`). */
  readonly mode: string
  readonly append: boolean
  readonly parents: boolean
  readonly asRoot: boolean
}

export interface TailRequest {
  readonly unit?: string
  readonly path?: string
  readonly lines: number
}

export type ServiceAction = "enable" | "start" | "stop" | "restart"

/**
 * Guest files, processes, services, logs, packages and users over the guest transport. Every
 * operation takes a `GuestSession` (a running VM's ssh target and guest definition); tool input
 * reaches the guest only as arguments of constant scripts.
 */
export class GuestOps extends Context.Tag("stoat/GuestOps")<
  GuestOps,
  {
    readonly exec: (session: GuestSession, request: ExecRequest) => Effect.Effect<ExecResult, GuestError>
    readonly readFile: (session: GuestSession, request: ReadRequest) => Effect.Effect<FileContent, GuestError>
    readonly writeFile: (session: GuestSession, request: WriteRequest) => Effect.Effect<WriteFileResult, GuestError>
    readonly listDir: (session: GuestSession, path: string) => Effect.Effect<DirListing, GuestError>
    readonly stat: (session: GuestSession, path: string) => Effect.Effect<DirEntry, GuestError>
    readonly ps: (session: GuestSession) => Effect.Effect<ProcessList, GuestError>
    readonly svcStatus: (session: GuestSession, name: string) => Effect.Effect<SvcStatus, GuestError>
    readonly svc: (
      session: GuestSession,
      name: string,
      action: ServiceAction
    ) => Effect.Effect<CommandResult, GuestError>
    readonly tailLog: (session: GuestSession, request: TailRequest) => Effect.Effect<TailLines, GuestError>
    readonly pkgInstall: (
      session: GuestSession,
      packages: ReadonlyArray<string>
    ) => Effect.Effect<CommandResult, GuestError>
    readonly useradd: (session: GuestSession, name: string) => Effect.Effect<CommandResult, GuestError>
  }
>() {}

/** The command a shell reported missing (`sh: foo: not found`, `bash: foo: command not found`, `env: 'foo': No such file…`). */
export const missingCommand = (stderr: string): string | undefined => {
  const match =
    /([^\s:'"`]+)'?: (?:command )?not found/.exec(stderr) ?? /env: '([^']+)': No such file or directory/.exec(stderr)
  return match?.[1]
}

const firstLine = (text: string) => text.trim().split("\n")[0] ?? ""

/**
 * Why a guest command could not do its work at all, or undefined when it ran: it was not
 * finished in time (`timeout`), its program is missing (`capability_unavailable` naming it), or
 * the guest refused to escalate (`access_denied`).
 */
export const notRunnable = (
  session: GuestSession,
  out: ExecOutput,
  subject: string,
  what: string
): GuestError | undefined => {
  const stderr = lossyText(out.stderr)
  if (out.timedOut) return new Timeout({ message: `${what} on VM ${session.vm} did not finish in time`, subject })
  const missing = out.exitCode === 127 ? missingCommand(stderr) : undefined
  if (missing !== undefined)
    return new CapabilityUnavailable({
      reason: missing,
      message: `${what} needs ${missing}, which VM ${session.vm} does not have`,
      subject: session.vm
    })
  if (
    out.exitCode !== 0 &&
    /password is required|not in the sudoers|not allowed to (execute|run)|may not run sudo/i.test(stderr)
  )
    return new AccessDenied({
      message: `${what}: VM ${session.vm} refused to run it as root (${session.guest.escalate.join(" ")}): ${firstLine(stderr)}`,
      subject
    })
  return undefined
}

/**
 * A failed helper command as the typed error it stands for, read from the guest's stderr:
 * besides `notRunnable`, a permission error is `access_denied`, a missing path `not_found`.
 */
export const helperFailure = (session: GuestSession, out: ExecOutput, subject: string, what: string): GuestError => {
  const early = notRunnable(session, out, subject, what)
  if (early !== undefined) return early
  const { vm, target } = session
  const stderr = lossyText(out.stderr)
  if (/Permission denied|Operation not permitted|Read-only file system/i.test(stderr))
    return new AccessDenied({ message: `permission denied: ${subject} (VM ${vm}, user ${target.user})`, subject })
  if (/No such file|Not a directory|does not exist|Directory nonexistent|nonexistent directory/i.test(stderr))
    return new NotFound({ message: `no such file or directory: ${subject} (VM ${vm})`, subject })
  if (/Is a directory/i.test(stderr))
    return new Usage({ message: `${subject} is a directory (VM ${vm}); use list_dir`, subject })
  return new Internal({
    message: `${what} on VM ${vm} failed with exit status ${out.exitCode}: ${firstLine(stderr) || "no error output"}`,
    subject
  })
}

const FILE_TYPES: ReadonlyArray<[number, string]> = [
  [0o100000, "file"],
  [0o040000, "dir"],
  [0o120000, "symlink"],
  [0o010000, "fifo"],
  [0o140000, "socket"],
  [0o020000, "char"],
  [0o060000, "block"]
]

/** `0644`, `1777`, `4755`: the permission bits as four octal digits. */
export const octalMode = (mode: number): string => (mode & 0o7777).toString(8).padStart(4, "0")

/** One `STAT_FORMAT` line (size, raw mode in hex, mtime epoch, owner) as a DirEntry named `name`. */
export const parseStatLine = (name: string, line: string): DirEntry | undefined => {
  const [size, rawMode, mtime, owner] = line.split("\t")
  if (size === undefined || rawMode === undefined || mtime === undefined || owner === undefined) return undefined
  const mode = Number.parseInt(rawMode, 16)
  const seconds = Number(mtime)
  if (!/^\d+$/.test(size) || Number.isNaN(mode) || !Number.isFinite(seconds)) return undefined
  const type = FILE_TYPES.find(([bits]) => (mode & 0o170000) === bits)?.[1] ?? "other"
  return {
    name,
    type,
    size: Number(size),
    mode: octalMode(mode),
    mtime: new Date(seconds * 1000).toISOString().replace(".000Z", "Z"),
    owner
  }
}

/** LIST_SCRIPT's output: names (NUL-separated, an empty one ends them), the total, then stat lines. */
export const parseListing = (
  bytes: Uint8Array
): { names: Array<string>; total: number; lines: Array<string> } | undefined => {
  const buffer = Buffer.from(bytes)
  const names: Array<string> = []
  let at = 0
  for (;;) {
    const end = buffer.indexOf(0, at)
    if (end < 0) return undefined
    if (end === at) break
    names.push(buffer.subarray(at, end).toString("utf8"))
    at = end + 1
  }
  const rest = buffer.subarray(at + 1).toString("utf8")
  const newline = rest.indexOf("\n")
  const total = Number(rest.slice(0, newline))
  if (newline < 0 || !Number.isInteger(total)) return undefined
  return {
    names,
    total,
    lines: rest
      .slice(newline + 1)
      .split("\n")
      .filter((line) => line !== "")
  }
}

/** `ps` output (procps with ELAPSED, or busybox without) as rows; the header names the columns. */
export const parsePs = (text: string, cap: number): ProcessList => {
  const [header = "", ...rows] = text.split("\n").filter((line) => line.trim() !== "")
  const withElapsed = /\bELAPSED\b/.test(header)
  const pattern = withElapsed ? /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(.*)$/ : /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/
  const processes = rows.flatMap((row) => {
    const match = pattern.exec(row)
    if (!match) return []
    const [, pid, ppid, user] = match
    const command = (withElapsed ? match[5] : match[4]) ?? ""
    return [
      {
        pid: Number(pid),
        ppid: Number(ppid),
        user: user ?? "",
        ...(withElapsed ? { elapsed: match[4] ?? "" } : {}),
        command
      }
    ]
  })
  return { processes: processes.slice(0, cap), truncated: processes.length > cap }
}

const commandResult = (out: ExecOutput): CommandResult => ({
  stdout: lossyText(out.stdout),
  stderr: lossyText(out.stderr),
  exit_code: out.exitCode
})

const isSystemd = (session: GuestSession) =>
  session.guest.init === "systemd" || session.guest.capabilities.includes("systemd")

/** `name=value` words for `env`. */
const envWords = (env: Readonly<Record<string, string>>) =>
  Object.entries(env).map(([name, value]) => `${name}=${value}`)

export const makeGuestOps = (transport: Context.Tag.Service<GuestTransport>): Context.Tag.Service<GuestOps> => {
  const run = (session: GuestSession, argv: ReadonlyArray<string>, options: ExecOptions = {}) =>
    transport.exec(session.target, argv, {
      timeoutMs: HELPER_TIMEOUT_MS,
      maxOutputBytes: HELPER_OUTPUT_BYTES,
      ...options
    })

  /** Runs a helper and returns its stdout; a non-zero exit is the typed error its stderr names. */
  const helper = (
    session: GuestSession,
    argv: ReadonlyArray<string>,
    subject: string,
    what: string,
    options: ExecOptions = {}
  ) =>
    Effect.flatMap(run(session, argv, options), (out) =>
      out.exitCode === 0 && !out.timedOut
        ? Effect.succeed(out)
        : Effect.fail(helperFailure(session, out, subject, what))
    )

  /** argv as root in this session's guest (see asRoot: a guest without escalate words is capability_unavailable). */
  const rooted = (session: GuestSession, argv: ReadonlyArray<string>, what: string) =>
    asRoot(session.target, session.guest, argv, what)

  /** A command whose result the caller gets (svc, pkg_install, useradd): its exit status is data, unless it could not run at all. */
  const rootCommand = (
    session: GuestSession,
    argv: ReadonlyArray<string>,
    subject: string,
    what: string,
    options: ExecOptions = {}
  ) =>
    Effect.flatMap(rooted(session, argv, what), (rooted) =>
      Effect.flatMap(run(session, rooted, options), (out) => {
        const failure = notRunnable(session, out, subject, what)
        return failure === undefined ? Effect.succeed(out) : Effect.fail(failure)
      })
    )

  const unavailable = (session: GuestSession, reason: string, message: string) =>
    new CapabilityUnavailable({ reason, message, subject: session.vm })

  const template = (session: GuestSession, text: string | undefined, reason: string, what: string) =>
    text === undefined || text.trim() === ""
      ? Effect.fail(
          unavailable(
            session,
            reason,
            `${what} is not available on VM ${session.vm}: guest ${session.guest.name || "(unknown)"} defines no ${reason} command`
          )
        )
      : Effect.succeed(templateScript(text))

  /** SFTP first; a guest that refuses the sftp subsystem gets the shell fallback. */
  const orShell = <A, E, E2>(sftp: Effect.Effect<A, E | CapabilityUnavailable>, shell: Effect.Effect<A, E2>) =>
    Effect.catchIf(
      sftp,
      (error): error is CapabilityUnavailable => error instanceof CapabilityUnavailable && error.reason === "sftp",
      () => shell
    )

  const readViaShell = (session: GuestSession, path: string, offset: number, count: number) =>
    Effect.flatMap(
      helper(session, script("read", READ_SCRIPT, [path, String(offset), String(count)]), path, "read_file"),
      (out) => {
        const buffer = Buffer.from(out.stdout)
        const newline = buffer.indexOf(0x0a)
        const size = Number(buffer.subarray(0, Math.max(newline, 0)).toString("latin1"))
        if (newline < 0 || !Number.isInteger(size))
          return Effect.fail(
            new Internal({ message: `read_file on VM ${session.vm}: unexpected output from the guest`, subject: path })
          )
        return Effect.succeed({ data: new Uint8Array(buffer.subarray(newline + 1)), size })
      }
    )

  const exec: Context.Tag.Service<GuestOps>["exec"] = (session, request) =>
    Effect.gen(function* () {
      const seconds = request.timeoutSeconds
      const started = yield* Clock.currentTimeMillis
      const out = yield* transport.exec(
        session.target,
        script("timeout", TIMEOUT_SCRIPT, [String(seconds), ...request.argv]),
        {
          // At the deadline the transport TERMs the wrapper, which ends the command's whole process group.
          timeoutMs: seconds * 1000,
          maxOutputBytes: GUEST_CAPS.execOutputBytes,
          ...(request.stdin !== undefined ? { stdin: request.stdin } : {}),
          ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
          ...(request.env !== undefined ? { env: request.env } : {})
        }
      )
      const elapsed = (yield* Clock.currentTimeMillis) - started
      // A command that exits 124 or by TERM/KILL before its deadline did so on its own.
      const timedOut = out.timedOut || (GUEST_TIMEOUT_EXITS.has(out.exitCode) && elapsed >= seconds * 1000)
      return {
        exit_code: out.exitCode,
        ...bytesField("stdout", out.stdout),
        ...bytesField("stderr", out.stderr),
        ...(timedOut
          ? {
              timed_out: true,
              message: `stopped after ${seconds} s (timeout_seconds); the output is what it wrote until then. Run long commands with exec_bg and poll job_status/job_output.`
            }
          : {}),
        ...(out.truncated ? { truncated: true } : {})
      }
    })

  const readFile: Context.Tag.Service<GuestOps>["readFile"] = (session, request) =>
    Effect.gen(function* () {
      const offset = request.offset ?? 0
      const limit =
        request.maxBytes === undefined || request.maxBytes === 0
          ? GUEST_CAPS.readBytes
          : Math.min(request.maxBytes, GUEST_CAPS.readBytes)
      // One byte past the limit tells a file that goes on (even one whose stat size is 0, as in /proc) from one that ends there.
      const read = yield* orShell(
        transport.readFile(session.target, request.path, { offset, maxBytes: limit + 1 }),
        readViaShell(session, request.path, offset, limit + 1)
      )
      const data = read.data.subarray(0, limit)
      // A stat size of 0 with bytes read is a /proc-like file: count what was read.
      const size = read.data.length > 0 ? Math.max(read.size, offset + read.data.length) : read.size
      return { ...textOrBase64(data), size, truncated: read.data.length > limit }
    })

  const writeFile: Context.Tag.Service<GuestOps>["writeFile"] = (session, request) =>
    Effect.gen(function* () {
      const mode = Number.parseInt(request.mode, 8)
      const result = { path: request.path, bytes: request.content.length, mode: octalMode(mode) }
      const shellArgs = [request.path, request.append ? "a" : "w", octalMode(mode), request.parents ? "p" : ""]
      const viaShell = (argv: ReadonlyArray<string>) =>
        helper(session, argv, request.path, "write_file", { stdin: request.content })
      if (request.asRoot && session.target.user !== "root") {
        yield* viaShell(yield* rooted(session, script("write", WRITE_SCRIPT, shellArgs), "write_file as_root"))
        return result
      }
      // Creating the folders takes a command anyway: the write goes along in the same one.
      if (request.parents) {
        yield* viaShell(script("write", WRITE_SCRIPT, shellArgs))
        return result
      }
      yield* orShell(
        transport.writeFile(session.target, request.path, request.content, { mode, append: request.append }).pipe(
          // SFTP answers a folder with its generic "Failure": name the cause when the path is one.
          Effect.catchIf(
            (error): error is Internal => error instanceof Internal,
            (error) =>
              Effect.flatMap(
                Effect.option(stat(session, request.path)),
                (entry): Effect.Effect<never, Internal | Usage> =>
                  entry._tag === "Some" && entry.value.type === "dir"
                    ? Effect.fail(
                        new Usage({
                          message: `${request.path} is a directory (VM ${session.vm}); write to a file path inside it`,
                          subject: request.path
                        })
                      )
                    : Effect.fail(error)
              )
          )
        ),
        viaShell(script("write", WRITE_SCRIPT, shellArgs))
      )
      return result
    })

  const listOnce = (session: GuestSession, path: string) =>
    Effect.flatMap(run(session, script("ls", LIST_SCRIPT, [path, String(GUEST_CAPS.listEntries)])), (out) => {
      const listing = parseListing(out.stdout)
      // stat of an entry removed meanwhile fails, but the listing itself is still there.
      if (listing === undefined)
        return Effect.fail(helperFailure(session, out.exitCode === 0 ? { ...out, exitCode: 1 } : out, path, "list_dir"))
      return Effect.succeed(listing)
    })

  const listDir: Context.Tag.Service<GuestOps>["listDir"] = (session, path) =>
    Effect.gen(function* () {
      let listing = yield* listOnce(session, path)
      // Entries added or removed between the two passes shift the stat lines: list once more.
      if (listing.lines.length !== listing.names.length) listing = yield* listOnce(session, path)
      if (listing.lines.length !== listing.names.length)
        return yield* new Internal({
          message: `list_dir on VM ${session.vm}: ${path} kept changing while it was listed; try again`,
          subject: path
        })
      const entries = listing.names.flatMap((name, index) => {
        const entry = parseStatLine(name, listing.lines[index] ?? "")
        return entry ? [entry] : []
      })
      return { entries, truncated: listing.total > listing.names.length }
    })

  const stat: Context.Tag.Service<GuestOps>["stat"] = (session, path) =>
    Effect.flatMap(helper(session, script("stat", STAT_SCRIPT, [path]), path, "stat"), (out) => {
      const entry = parseStatLine(path === "/" ? "/" : posix.basename(path), lossyText(out.stdout).trim())
      return entry
        ? Effect.succeed(entry)
        : Effect.fail(
            new Internal({ message: `stat on VM ${session.vm}: unexpected output from the guest`, subject: path })
          )
    })

  const ps: Context.Tag.Service<GuestOps>["ps"] = (session) =>
    Effect.map(helper(session, script("ps", PS_SCRIPT), session.vm, "ps"), (out) =>
      parsePs(lossyText(out.stdout), GUEST_CAPS.psRows)
    )

  const svcStatus: Context.Tag.Service<GuestOps>["svcStatus"] = (session, name) =>
    Effect.gen(function* () {
      const body = yield* template(session, session.guest.svc.status, "svc.status", "svc_status")
      const enabledScript = ENABLED_SCRIPTS[session.guest.init]
      const [status, enabled] = yield* Effect.all(
        [
          run(session, script("svc", body, [name])),
          enabledScript === undefined
            ? Effect.succeed(undefined)
            : run(session, script("enabled", enabledScript, [name]))
        ],
        { concurrency: 2 }
      )
      const failure = notRunnable(session, status, name, "svc_status")
      if (failure !== undefined) return yield* failure
      // systemctl: 4 = no such unit.
      if (isSystemd(session) && status.exitCode === 4)
        return yield* new NotFound({ message: `no service ${name} on VM ${session.vm}`, subject: name })
      return { ...commandResult(status), active: status.exitCode === 0, enabled: enabled?.exitCode === 0 }
    })

  const svc: Context.Tag.Service<GuestOps>["svc"] = (session, name, action) =>
    Effect.flatMap(template(session, session.guest.svc[action], `svc.${action}`, `svc ${action}`), (body) =>
      Effect.map(rootCommand(session, script("svc", body, [name]), name, `svc ${action}`), commandResult)
    )

  const lines = (out: ExecOutput, count: number): TailLines => ({
    lines: lossyText(out.stdout)
      .split("\n")
      .map((line) => line.replace(/\r$/, ""))
      .filter((line, index, all) => index < all.length - 1 || line !== "")
      .slice(-count)
  })

  const journal = (session: GuestSession, count: number, unit?: string) =>
    Effect.flatMap(
      rooted(
        session,
        ["journalctl", "--no-pager", "--quiet", "-n", String(count), ...(unit === undefined ? [] : ["-u", unit])],
        "tail_log"
      ),
      (argv) => helper(session, argv, unit ?? "journal", "tail_log")
    )

  const tailLog: Context.Tag.Service<GuestOps>["tailLog"] = (session, request) =>
    Effect.gen(function* () {
      const count = Math.min(Math.max(request.lines, 1), GUEST_CAPS.tailLines)
      if (request.unit !== undefined && request.path !== undefined)
        return yield* new Usage({ message: "tail_log takes unit or path, not both", subject: session.vm })
      if (request.unit !== undefined) {
        if (!isSystemd(session))
          return yield* unavailable(
            session,
            "systemd",
            `tail_log unit= reads systemd's journal, and VM ${session.vm} (guest ${session.guest.name || "unknown"}, init ${session.guest.init}) has no systemd; give path= instead`
          )
        return lines(yield* journal(session, count, request.unit), count)
      }
      if (request.path !== undefined)
        return lines(
          yield* helper(session, script("tail", TAIL_SCRIPT, [request.path, String(count)]), request.path, "tail_log"),
          count
        )
      const logPath = session.guest.log_path
      if (logPath !== undefined && logPath !== "") {
        const argv = yield* rooted(session, script("tail", TAIL_SCRIPT, [logPath, String(count)]), "tail_log")
        return lines(yield* helper(session, argv, logPath, "tail_log"), count)
      }
      if (isSystemd(session)) return lines(yield* journal(session, count), count)
      return yield* unavailable(
        session,
        "log_path",
        `VM ${session.vm} (guest ${session.guest.name || "unknown"}) has neither systemd's journal nor a log_path in its guest definition; give path= to tail a file`
      )
    })

  const pkgInstall: Context.Tag.Service<GuestOps>["pkgInstall"] = (session, packages) =>
    Effect.gen(function* () {
      const { pkg } = session.guest
      if (pkg.install.length === 0)
        return yield* unavailable(
          session,
          "package_manager",
          `pkg_install is not available on VM ${session.vm}: guest ${session.guest.name || "(unknown)"} has no package manager`
        )
      const env = envWords(pkg.env)
      const withEnv = (argv: ReadonlyArray<string>) => (env.length === 0 ? argv : ["env", ...env, ...argv])
      const options = { timeoutMs: PACKAGE_TIMEOUT_MS }
      const subject = packages.join(" ")
      const setup =
        pkg.setup.trim() === ""
          ? undefined
          : yield* rootCommand(
              session,
              withEnv(script("pkg_setup", pkg.setup)),
              subject,
              "pkg_install (setup)",
              options
            )
      if (setup !== undefined && setup.exitCode !== 0) return commandResult(setup)
      const install = commandResult(
        yield* rootCommand(session, withEnv([...pkg.install, ...packages]), subject, "pkg_install", options)
      )
      if (setup === undefined) return install
      const before = commandResult(setup)
      return {
        stdout: before.stdout + install.stdout,
        stderr: before.stderr + install.stderr,
        exit_code: install.exit_code
      }
    })

  const useradd: Context.Tag.Service<GuestOps>["useradd"] = (session, name) =>
    Effect.flatMap(template(session, session.guest.cmd["useradd"], "cmd.useradd", "useradd"), (body) =>
      Effect.map(rootCommand(session, script("useradd", body, [name]), name, "useradd"), commandResult)
    )

  return { exec, readFile, writeFile, listDir, stat, ps, svcStatus, svc, tailLog, pkgInstall, useradd }
}

/** GuestOps over whatever GuestTransport is provided (ssh2 live, or the fake). */
export const GuestOpsLive: Layer.Layer<GuestOps, never, GuestTransport> = Layer.effect(
  GuestOps,
  Effect.map(GuestTransport, makeGuestOps)
)
