import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { isProcessAlive, readSmallFileSync, type RunState, type VmRef } from "@stoat/core"
import { vmFiles } from "./argv.js"

export const pidfileOf = (vm: VmRef): string => join(vm.dir, "qemu.pid")

/** A process's arguments (its /proc cmdline split at NULs); undefined once it is gone. A zombie has none. */
const argvOf = (pid: number): ReadonlyArray<string> | undefined => {
  try {
    // A kernel file (stat size 0, so read to its end): no FIFO can stand here.
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
  } catch {
    return undefined
  }
}

/**
 * QEMU of this VM writes this VM's pidfile: matching that one argument, not any mention of the
 * folder, keeps a fork resuming from a checkpoint in its source's folder from passing for the source.
 */
const isQemuOf = (argv: ReadonlyArray<string>, pidfile: string): boolean => {
  const at = argv.indexOf("-pidfile")
  return at >= 0 && argv[at + 1] === pidfile
}

/** True when pid runs QEMU for this VM. Guards against pid reuse. */
export const ownsVm = (pid: number, vm: VmRef): boolean => {
  const argv = argvOf(pid)
  return argv !== undefined && isQemuOf(argv, pidfileOf(vm))
}

/** The live QEMU of this VM found by its command line, whatever its pidfile says: every process is looked at. */
const findQemuOf = (vm: VmRef): number | undefined => {
  const pidfile = pidfileOf(vm)
  let entries: ReadonlyArray<string>
  try {
    entries = readdirSync("/proc")
  } catch {
    return undefined
  }
  for (const entry of entries) {
    const pid = Number(entry)
    if (!Number.isInteger(pid) || pid === process.pid) continue
    const argv = argvOf(pid)
    if (argv !== undefined && isQemuOf(argv, pidfile)) return pid
  }
  return undefined
}

/** A pid is a few digits; anything larger in a pidfile is not ours. */
const PIDFILE_MAX_BYTES = 64

/** The pidfile's text; undefined when there is none, "" when something there cannot be read as one (a FIFO, a folder, too large). */
const readPidfile = (pidfile: string): string | undefined => {
  try {
    return readSmallFileSync(pidfile, PIDFILE_MAX_BYTES)
  } catch (error) {
    return (error as { code?: string }).code === "ENOENT" ? undefined : ""
  }
}

/**
 * Running = the pidfile's pid alive and running this VM. When the pidfile does not say so but
 * something of a run is left (the pidfile, overwritten or naming a dead pid, or QEMU's QMP socket),
 * QEMU is looked for by its command line: a damaged pidfile must not orphan a running QEMU. Found
 * there, the VM runs (`orphaned`); not found, QEMU ended without removing its files (killed or
 * crashed: a QEMU that exits removes its pidfile and QMP socket), and they are the `leftovers`.
 * Synchronous and read-only: a listing asks this of every VM on every call, and a stopped VM costs
 * two failed opens; the process scan happens only when a run was left behind.
 */
export const readRunState = (vm: VmRef): RunState => {
  const files = vmFiles(vm.dir)
  const text = readPidfile(files.pidfile)
  if (text !== undefined) {
    const pid = Number.parseInt(text.trim(), 10)
    if (Number.isInteger(pid) && pid > 0 && isProcessAlive(pid) && ownsVm(pid, vm)) {
      const startedAt = startedAtOf(files.pidfile)
      return { running: true, pid, ...(startedAt !== undefined ? { startedAt } : {}) }
    }
  } else if (!existsSync(files.qmp)) {
    return { running: false }
  }
  const found = findQemuOf(vm)
  if (found !== undefined) return { running: true, pid: found, orphaned: true }
  return {
    running: false,
    leftovers: [files.pidfile, files.qmp, files.vnc, files.migration, files.boot].filter((path) => existsSync(path))
  }
}

const startedAtOf = (pidfile: string): string | undefined => {
  try {
    return statSync(pidfile).mtime.toISOString()
  } catch {
    return undefined
  }
}

/** Ends at once the QEMU a run state names, if any: what a failed or interrupted start leaves. */
export const killRunning = (state: RunState): void => {
  if (state.pid === undefined) return
  try {
    process.kill(state.pid, "SIGKILL")
  } catch {
    // Gone already.
  }
}
