/**
 * FakeJobs: the guest side of background jobs for the in-memory guest. It answers the constant
 * job scripts (launch, facts, signal) the way a POSIX guest running them would, over the fake
 * guest's filesystem and a small process table, and hands every other command to the handler it
 * wraps. Install it with `jobs.install(guestState)`.
 *
 * - A job whose argv[0] is `sleep` keeps running until it is signalled or `finish`ed; any other
 *   argv runs at once through the wrapped handler, its output and status written to the job files.
 * - `holdPid = true` launches jobs without writing their pid (the `starting` window).
 * - `reboot(vm)` clears /run and ends every process, as a guest restart does.
 */
import { posix } from "node:path"
import { constants as osConstants } from "node:os"
import {
  JOB_FACTS,
  JOB_LAUNCHER,
  LAUNCHED,
  JOB_SIGNAL,
  JOBS_DIR,
  LAUNCH_NO_CWD,
  LAUNCH_NO_DIR,
  SIGNAL_NO_PROCESS,
  SIGNAL_REFUSED
} from "../guest/job-scripts.js"
import { type FakeExecHandler, type FakeExecResult, type FakeGuestFs, type FakeGuestState } from "./fake-guest.js"

interface FakeProcess {
  readonly vm: string
  readonly dir: string
  alive: boolean
}

const encoder = new TextEncoder()

export class FakeJobs {
  /** Launch jobs without recording their pid until `releasePid`. */
  holdPid = false
  /** Signals the fake jobs ignore (they stay running). */
  readonly ignoredSignals = new Set<string>()
  readonly processes = new Map<number, FakeProcess>()
  private nextPid = 1000
  private readonly held = new Map<string, number>()

  /** Wraps the guest's current exec handler; returns the state for chaining. */
  install(state: FakeGuestState): FakeGuestState {
    const inner = state.execHandler
    const handler: FakeExecHandler = (argv, context) =>
      this.handle(argv, context.fs, context.target.vm, inner, context) ?? inner(argv, context)
    state.execHandler = handler
    return state
  }

  /** Ends a running job with this status and output. */
  finish(
    fs: FakeGuestFs,
    dir: string,
    exitCode: number,
    stdout: string | Uint8Array = "",
    stderr: string | Uint8Array = ""
  ): void {
    for (const [, process] of this.processes) if (process.dir === dir) process.alive = false
    fs.write(`${dir}/out`, stdout)
    fs.write(`${dir}/err`, stderr)
    fs.write(`${dir}/exit`, `${exitCode}\n`)
  }

  /** Writes the pid of a job launched while `holdPid` was set. */
  releasePid(fs: FakeGuestFs, dir: string): void {
    const pid = this.held.get(dir)
    if (pid === undefined) return
    this.held.delete(dir)
    fs.write(`${dir}/pid`, `${pid}\n`)
  }

  /** The guest restarted: /run is empty and no job process is left. */
  reboot(fs: FakeGuestFs, vm: string): void {
    for (const path of [...fs.files.keys()]) if (path.startsWith(`${JOBS_DIR}/`)) fs.files.delete(path)
    for (const dir of [...fs.dirs]) if (dir.startsWith(`${JOBS_DIR}/`)) fs.dirs.delete(dir)
    for (const process of this.processes.values()) if (process.vm === vm) process.alive = false
  }

  private handle(
    argv: ReadonlyArray<string>,
    fs: FakeGuestFs,
    vm: string,
    inner: FakeExecHandler,
    context: Parameters<FakeExecHandler>[1]
  ): FakeExecResult | undefined {
    if (argv[0] !== "sh" || argv[1] !== "-c") return undefined
    const args = argv.slice(4)
    switch (argv[2]) {
      case JOB_LAUNCHER:
        return this.launch(fs, vm, args[1]!, args[2]!, args.slice(3), inner, context)
      case JOB_FACTS:
        return { exitCode: 0, stdout: args.map((dir) => this.facts(fs, dir)).join("") }
      case JOB_SIGNAL:
        return this.signal(fs, args[0]!, args[1]!)
      default:
        return undefined
    }
  }

  private launch(
    fs: FakeGuestFs,
    vm: string,
    dir: string,
    cwd: string,
    argv: ReadonlyArray<string>,
    inner: FakeExecHandler,
    context: Parameters<FakeExecHandler>[1]
  ): FakeExecResult {
    if (fs.isDenied(dir))
      return { exitCode: LAUNCH_NO_DIR, stderr: `mkdir: can't create directory '${dir}': Permission denied\n` }
    if (cwd !== "" && !fs.dirs.has(posix.normalize(cwd)))
      return { exitCode: LAUNCH_NO_CWD, stderr: `sh: cd: can't cd to ${cwd}: No such file or directory\n` }
    fs.mkdirp(dir)
    fs.write(`${dir}/out`, "")
    fs.write(`${dir}/err`, "")
    const pid = this.nextPid++
    this.processes.set(pid, { vm, dir, alive: true })
    if (this.holdPid) this.held.set(dir, pid)
    else fs.write(`${dir}/pid`, `${pid}\n`)
    if (argv[0] !== "sleep") {
      const result = inner(argv, { ...context, ...(cwd !== "" ? { cwd } : {}), input: new Uint8Array() })
      this.finish(fs, dir, result.exitCode, result.stdout, result.stderr)
    }
    return { exitCode: 0, stdout: `${LAUNCHED}\n` }
  }

  private pidOf(fs: FakeGuestFs, dir: string): number | undefined {
    const text = fs.readText(`${dir}/pid`)?.trim()
    return text !== undefined && /^[0-9]+$/.test(text) ? Number(text) : undefined
  }

  private facts(fs: FakeGuestFs, dir: string): string {
    const pid = this.pidOf(fs, dir)
    const alive = pid !== undefined && this.processes.get(pid)?.alive === true
    const exit = fs.readText(`${dir}/exit`)?.trim()
    return `${fs.dirs.has(dir) ? 1 : 0}\t${alive ? 1 : 0}\t${pid ?? "-"}\t${exit !== undefined && /^[0-9]+$/.test(exit) ? exit : "-"}\n`
  }

  private signal(fs: FakeGuestFs, dir: string, name: string): FakeExecResult {
    const number = (osConstants.signals as Record<string, number | undefined>)[`SIG${name}`]
    if (number === undefined) return { exitCode: SIGNAL_REFUSED, stderr: `sh: unknown signal '${name}'\n` }
    const pid = this.pidOf(fs, dir)
    const process = pid === undefined ? undefined : this.processes.get(pid)
    if (!process?.alive) return { exitCode: SIGNAL_NO_PROCESS, stderr: `sh: can't kill pid ${pid}: No such process\n` }
    if (this.ignoredSignals.has(name)) return { exitCode: 0 }
    process.alive = false
    fs.files.set(`${dir}/exit`, { data: encoder.encode(`${128 + number}\n`), mode: 0o644 })
    return { exitCode: 0 }
  }
}
