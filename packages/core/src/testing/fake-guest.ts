/**
 * FakeGuest: an in-memory `GuestTransport` for tests and other tools' harnesses.
 *
 * - Each VM (by name) has its own `FakeGuestFs`: files (bytes + mode), directories, and paths the
 *   ssh user may not touch. Seed it with `state.fs("web").writeText("/etc/motd", "hi")`.
 * - `exec` runs `state.execHandler(argv, context)`. The default handler is a tiny interpreter for
 *   `true`, `false`, `echo`, `cat [path…]` (no path: stdin) and `sh -c "<one of those>"`; anything
 *   else answers exit 127. Replace the handler to script a guest; every call is logged in `execs`.
 * - `probe(port)` is true while a VM with that ssh port runs in the shared `FakeHypervisorState`
 *   and the port is not in `unreachablePorts` (a guest whose sshd is not up yet). Without a
 *   hypervisor state every port answers. Guest calls to an unreachable VM fail `cannot_reach`.
 * - `release` calls are recorded in `releases` (undefined = all VMs).
 */
import { readFile, writeFile } from "node:fs/promises"
import { posix } from "node:path"
import { Effect, Layer, type Context } from "effect"
import { AccessDenied, CannotReach, CapabilityUnavailable, Internal, NotFound, waitForSsh, Usage } from "../errors.js"
import { GuestTransport, type ExecOptions, type ExecOutput, type SshTarget } from "../ports/guest-transport.js"
import type { FakeHypervisorState } from "./fake-hypervisor.js"
import {
  LIST_SCRIPT,
  PS_SCRIPT,
  READ_SCRIPT,
  STAT_SCRIPT,
  TAIL_SCRIPT,
  TIMEOUT_SCRIPT,
  WRITE_SCRIPT
} from "../guest/scripts.js"

export interface FakeGuestFile {
  data: Uint8Array
  mode: number
}

const encoder = new TextEncoder()
const bytesOf = (value: string | Uint8Array | undefined): Uint8Array =>
  value === undefined ? new Uint8Array() : typeof value === "string" ? encoder.encode(value) : value

/** One guest's filesystem. Paths are absolute POSIX paths; a file's parent folder must exist. */
export class FakeGuestFs {
  readonly files = new Map<string, FakeGuestFile>()
  readonly dirs = new Set<string>(["/", "/root", "/tmp", "/etc", "/home", "/mnt", "/mnt/work", "/var", "/var/log"])
  /** Paths (a folder covers everything under it) the ssh user may not read or write: `access_denied`. */
  readonly denied = new Set<string>()

  isDenied(path: string): boolean {
    for (const entry of this.denied)
      if (path === entry || path.startsWith(entry === "/" ? "/" : `${entry}/`)) return true
    return false
  }

  /** Creates the folder and its parents. */
  mkdirp(path: string): void {
    for (let dir = posix.normalize(path); !this.dirs.has(dir); dir = posix.dirname(dir)) this.dirs.add(dir)
  }

  /** Writes a file, creating its parent folders (test setup; the transport's writeFile does not). */
  write(path: string, data: string | Uint8Array, mode = 0o644): void {
    this.mkdirp(posix.dirname(path))
    this.files.set(path, { data: bytesOf(data), mode })
  }

  writeText(path: string, text: string, mode = 0o644): void {
    this.write(path, text, mode)
  }

  readText(path: string): string | undefined {
    const file = this.files.get(path)
    return file ? new TextDecoder().decode(file.data) : undefined
  }
}

export interface FakeExecResult {
  readonly exitCode: number
  readonly stdout?: string | Uint8Array
  readonly stderr?: string | Uint8Array
  readonly timedOut?: boolean
}

/** What a handler sees besides argv: the transport options, the target and that guest's filesystem. */
export interface FakeExecContext extends ExecOptions {
  readonly target: SshTarget
  readonly fs: FakeGuestFs
  /** `options.stdin` as bytes (empty when none). */
  readonly input: Uint8Array
}

export type FakeExecHandler = (argv: ReadonlyArray<string>, context: FakeExecContext) => FakeExecResult

/** Splits a `sh -c` script into words: quotes and backslashes only; any other shell syntax is refused. */
const shellWords = (script: string): string[] | undefined => {
  const words: string[] = []
  let word: string | undefined
  for (let i = 0; i < script.length; i++) {
    const char = script[i]!
    if (char === "'") {
      const end = script.indexOf("'", i + 1)
      if (end < 0) return undefined
      word = (word ?? "") + script.slice(i + 1, end)
      i = end
    } else if (char === '"') {
      let text = ""
      let j = i + 1
      for (; j < script.length && script[j] !== '"'; j++) {
        if (script[j] === "\\" && j + 1 < script.length && '"\\$`'.includes(script[j + 1]!)) j++
        else if ("$`".includes(script[j]!)) return undefined
        text += script[j]
      }
      if (j >= script.length) return undefined
      word = (word ?? "") + text
      i = j
    } else if (char === "\\") {
      if (i + 1 >= script.length) return undefined
      word = (word ?? "") + script[++i]
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word)
      word = undefined
    } else if ("|&;<>()$`*?[]{}~#".includes(char)) {
      return undefined
    } else {
      word = (word ?? "") + char
    }
  }
  if (word !== undefined) words.push(word)
  return words
}

/** Every fake file and folder was last modified at this time (2023-11-14T22:13:20Z). */
export const FAKE_MTIME = 1_700_000_000

/** What the guest's shell says about a path the fake cannot open: `undefined` when it can. */
const pathProblem = (fs: FakeGuestFs, path: string): string | undefined => {
  if (fs.isDenied(path)) return `${path}: Permission denied`
  if (!fs.files.has(path) && !fs.dirs.has(path)) return `${path}: No such file or directory`
  return undefined
}

const statLine = (fs: FakeGuestFs, path: string): string => {
  const file = fs.files.get(path)
  const raw = file ? 0o100000 | file.mode : 0o040755
  return `${file ? file.data.length : 4096}\t${raw.toString(16)}\t${FAKE_MTIME}\troot\t${file ? "regular file" : "directory"}\n`
}

const failed = (stderr: string): FakeExecResult => ({ exitCode: 1, stderr: `${stderr}\n` })

/**
 * The constant scripts of the guest operations (guest/scripts.ts), run against the fake
 * filesystem so that the whole catalog works without a guest; undefined for any other script.
 */
const guestScript = (
  body: string,
  args: ReadonlyArray<string>,
  context: FakeExecContext
): FakeExecResult | undefined => {
  const { fs } = context
  const path = posix.normalize(args[0] ?? "/")
  switch (body) {
    case STAT_SCRIPT: {
      const problem = pathProblem(fs, path)
      return problem ? failed(`stat: ${problem}`) : { exitCode: 0, stdout: statLine(fs, path) }
    }
    case LIST_SCRIPT: {
      const problem = pathProblem(fs, path) ?? (fs.files.has(path) ? `${path}: Not a directory` : undefined)
      if (problem) return failed(problem)
      const prefix = path === "/" ? "/" : `${path}/`
      const children = [...fs.dirs, ...fs.files.keys()]
        .filter((entry) => entry !== path && entry.startsWith(prefix) && !entry.slice(prefix.length).includes("/"))
        .sort()
      const listed = children.slice(0, Number(args[1]))
      const names = listed.map((entry) => `${entry.slice(prefix.length)}\0`).join("")
      return {
        exitCode: 0,
        stdout: `${names}\0${children.length}\n${listed.map((entry) => statLine(fs, entry)).join("")}`
      }
    }
    case READ_SCRIPT: {
      const problem = pathProblem(fs, path) ?? (fs.dirs.has(path) ? `${path}: Is a directory` : undefined)
      if (problem) return failed(problem)
      const data = fs.files.get(path)!.data
      const start = Number(args[1])
      return {
        exitCode: 0,
        stdout: Buffer.concat([Buffer.from(`${data.length}\n`), data.subarray(start, start + Number(args[2]))])
      }
    }
    case WRITE_SCRIPT: {
      const parent = posix.dirname(path)
      if (args[3] === "p") {
        if (fs.isDenied(parent)) return failed(`mkdir: ${parent}: Permission denied`)
        fs.mkdirp(parent)
      }
      if (fs.isDenied(path)) return failed(`sh: can't create ${path}: Permission denied`)
      if (fs.dirs.has(path)) return failed(`${path}: Is a directory`)
      if (!fs.dirs.has(parent)) return failed(`sh: can't create ${path}: No such file or directory`)
      const existing = fs.files.get(path)
      const data = args[1] === "a" && existing ? Buffer.concat([existing.data, context.input]) : context.input
      fs.files.set(path, { data: new Uint8Array(data), mode: Number.parseInt(args[2] ?? "644", 8) })
      return { exitCode: 0 }
    }
    case TAIL_SCRIPT: {
      const problem = pathProblem(fs, path) ?? (fs.dirs.has(path) ? `${path}: Is a directory` : undefined)
      if (problem) return failed(`tail: ${problem}`)
      const lines = new TextDecoder().decode(fs.files.get(path)!.data).split("\n")
      if (lines.at(-1) === "") lines.pop()
      const kept = lines.slice(-Number(args[1]))
      return { exitCode: 0, stdout: kept.map((line) => `${line}\n`).join("") }
    }
    case PS_SCRIPT:
      return { exitCode: 0, stdout: "  PID  PPID USER     ELAPSED COMMAND\n    1     0 root       01:00 init\n" }
    default:
      return undefined
  }
}

/**
 * The default exec handler: `true`, `false`, `echo`, `cat`, `sh -c` of exactly those, and the
 * guest operations' own scripts (list_dir, stat, ps, tail_log, exec's timeout wrapper, and the
 * shell fallbacks of read_file and write_file).
 */
export const defaultExecHandler: FakeExecHandler = (argv, context) => {
  const [command, ...args] = argv
  if (command === "sh" && args[0] === "-c" && args[1] !== undefined) {
    const scripted = guestScript(args[1], args.slice(3), context)
    if (scripted) return scripted
  }
  switch (command) {
    case "true":
      return { exitCode: 0 }
    case "false":
      return { exitCode: 1 }
    case "echo": {
      const noNewline = args[0] === "-n"
      const words = noNewline ? args.slice(1) : args
      return { exitCode: 0, stdout: words.join(" ") + (noNewline ? "" : "\n") }
    }
    case "cat": {
      if (args.length === 0) return { exitCode: 0, stdout: context.input }
      const chunks: Uint8Array[] = []
      let stderr = ""
      for (const path of args) {
        const absolute = posix.resolve(context.cwd ?? "/root", path)
        const file = context.fs.files.get(absolute)
        if (context.fs.isDenied(absolute)) stderr += `cat: ${path}: Permission denied\n`
        else if (file) chunks.push(file.data)
        else
          stderr += `cat: ${path}: ${context.fs.dirs.has(absolute) ? "Is a directory" : "No such file or directory"}\n`
      }
      return { exitCode: stderr === "" ? 0 : 1, stdout: Buffer.concat(chunks), stderr }
    }
    case "sh": {
      if (args[0] !== "-c" || args[1] === undefined)
        return { exitCode: 2, stderr: "sh: the fake guest only runs sh -c SCRIPT\n" }
      const words = shellWords(args[1])
      if (words === undefined)
        return { exitCode: 2, stderr: "sh: the fake guest supports only plain words and quotes\n" }
      if (words.length === 0) return { exitCode: 0 }
      return defaultExecHandler(words, context)
    }
    default:
      return { exitCode: 127, stderr: `sh: ${command ?? ""}: not found\n` }
  }
}

/** What the fake guests know and what was asked of them. Inspect and script it in tests. */
export class FakeGuestState {
  private readonly filesystems = new Map<string, FakeGuestFs>()
  /** Replace to script command results; see `defaultExecHandler`. */
  execHandler: FakeExecHandler = defaultExecHandler
  /** Ssh ports whose sshd does not answer yet (probe false, guest calls `cannot_reach`). */
  readonly unreachablePorts = new Set<number>()
  /** False: the guests have no SFTP server (file calls answer capability_unavailable "sftp", as ssh2's transport does). */
  sftp = true
  readonly execs: Array<{ readonly vm: string; readonly argv: ReadonlyArray<string>; readonly options: ExecOptions }> =
    []
  readonly probes: number[] = []
  readonly releases: Array<string | undefined> = []

  /** The filesystem of the VM named `vm`, made empty (standard folders only) on first use. */
  fs(vm: string): FakeGuestFs {
    let found = this.filesystems.get(vm)
    if (!found) {
      found = new FakeGuestFs()
      this.filesystems.set(vm, found)
    }
    return found
  }
}

const cap = (bytes: Uint8Array, max: number | undefined) =>
  max !== undefined && bytes.length > max ? bytes.subarray(0, max) : bytes

export const makeFakeGuest = (
  state: FakeGuestState,
  hypervisor?: FakeHypervisorState
): Context.Tag.Service<GuestTransport> => {
  const answers = (port: number): boolean => {
    if (state.unreachablePorts.has(port)) return false
    if (!hypervisor) return true
    for (const entry of hypervisor.running.values()) if (entry.plan.sshPort === port) return true
    return false
  }
  const reach = (target: SshTarget) =>
    answers(target.port)
      ? Effect.succeed(state.fs(target.vm))
      : Effect.fail(
          new CannotReach({
            message: `cannot reach VM "${target.vm}" over ssh (port ${target.port})`,
            subject: target.vm,
            hint: waitForSsh(target.vm)
          })
        )
  const guestPath = (fs: FakeGuestFs, vm: string, path: string) =>
    fs.isDenied(path)
      ? Effect.fail(new AccessDenied({ message: `${vm}:${path}: permission denied`, subject: path }))
      : Effect.succeed(posix.normalize(path))
  const hostError = (path: string) => (cause: unknown) =>
    (cause as { code?: string }).code === "ENOENT"
      ? new NotFound({ message: `${path}: no such file or directory`, subject: path })
      : new Internal({ message: `${path}: ${cause instanceof Error ? cause.message : String(cause)}`, subject: path })

  const noSftp = (target: SshTarget) =>
    state.sftp
      ? Effect.void
      : Effect.fail(
          new CapabilityUnavailable({
            reason: "sftp",
            message: `VM ${target.vm} has no SFTP server`,
            subject: target.vm
          })
        )

  const readGuest = (target: SshTarget, path: string) =>
    Effect.gen(function* () {
      const fs = yield* reach(target)
      yield* noSftp(target)
      const normal = yield* guestPath(fs, target.vm, path)
      const file = fs.files.get(normal)
      if (file) return file
      if (fs.dirs.has(normal))
        return yield* new Usage({ message: `${target.vm}:${path}: is a directory`, subject: path })
      return yield* new NotFound({ message: `${target.vm}:${path}: no such file`, subject: path })
    })

  const writeGuest = (
    target: SshTarget,
    path: string,
    data: Uint8Array,
    options: { readonly mode?: number; readonly append?: boolean } = {}
  ) =>
    Effect.gen(function* () {
      const fs = yield* reach(target)
      yield* noSftp(target)
      const normal = yield* guestPath(fs, target.vm, path)
      if (fs.dirs.has(normal))
        return yield* new Usage({ message: `${target.vm}:${path}: is a directory`, subject: path })
      if (!fs.dirs.has(posix.dirname(normal)))
        return yield* new NotFound({ message: `${target.vm}:${posix.dirname(normal)}: no such folder`, subject: path })
      const existing = fs.files.get(normal)
      const bytes = options.append && existing ? Buffer.concat([existing.data, data]) : data
      fs.files.set(normal, { data: new Uint8Array(bytes), mode: options.mode ?? existing?.mode ?? 0o644 })
    })

  return {
    exec: (target, argv, options = {}) =>
      Effect.flatMap(reach(target), (fs) =>
        Effect.sync((): ExecOutput => {
          state.execs.push({ vm: target.vm, argv: [...argv], options })
          // The guest-side timeout wrapper is stoat's own: a handler models the guest's programs, so
          // it gets the command the wrapper runs (`execs` keeps what went over the wire).
          const command = argv[0] === "sh" && argv[1] === "-c" && argv[2] === TIMEOUT_SCRIPT ? argv.slice(5) : argv
          const result = state.execHandler(command, { ...options, target, fs, input: bytesOf(options.stdin) })
          const stdout = bytesOf(result.stdout)
          const stderr = bytesOf(result.stderr)
          const out = cap(stdout, options.maxOutputBytes)
          const err = cap(stderr, options.maxOutputBytes)
          if (out.length > 0) options.onStdout?.(out)
          if (err.length > 0) options.onStderr?.(err)
          return {
            exitCode: result.exitCode,
            stdout: out,
            stderr: err,
            timedOut: result.timedOut === true,
            truncated: out.length < stdout.length || err.length < stderr.length
          }
        })
      ),
    readFile: (target, path, options = {}) =>
      Effect.map(readGuest(target, path), (file) => {
        const start = Math.min(options.offset ?? 0, file.data.length)
        const end =
          options.maxBytes !== undefined ? Math.min(file.data.length, start + options.maxBytes) : file.data.length
        return { data: file.data.slice(start, end), size: file.data.length }
      }),
    writeFile: (target, path, data, options) => writeGuest(target, path, data, options),
    upload: (target, localPath, remotePath) =>
      Effect.flatMap(Effect.tryPromise({ try: () => readFile(localPath), catch: hostError(localPath) }), (data) =>
        writeGuest(target, remotePath, data)
      ),
    download: (target, remotePath, localPath) =>
      Effect.flatMap(readGuest(target, remotePath), (file) =>
        Effect.tryPromise({ try: () => writeFile(localPath, file.data), catch: hostError(localPath) })
      ),
    probe: (port) =>
      Effect.sync(() => {
        state.probes.push(port)
        return answers(port)
      }),
    release: (vm) =>
      Effect.sync(() => {
        state.releases.push(vm)
      })
  }
}

/** The fake transport as a layer. Share `hypervisor` with the FakeHypervisor so probes follow VM runs. */
export const FakeGuest = (
  state: FakeGuestState = new FakeGuestState(),
  hypervisor?: FakeHypervisorState
): Layer.Layer<GuestTransport> => Layer.succeed(GuestTransport, makeFakeGuest(state, hypervisor))
