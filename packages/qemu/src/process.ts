import { readFileSync, statSync, unlinkSync } from "node:fs"
import { join } from "node:path"
import { readSmallFileSync, type RunState, type VmRef } from "@stoat/core"

export const pidfileOf = (vm: VmRef): string => join(vm.dir, "qemu.pid")

export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as { code?: string }).code === "EPERM"
  }
}

/** True when pid runs QEMU for this VM: its command line names the VM's folder. Guards against pid reuse. */
export const ownsVm = (pid: number, vm: VmRef): boolean => {
  try {
    // A kernel file (stat size 0, so read to its end): no FIFO can stand here.
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(`${vm.dir}/`)
  } catch {
    return false
  }
}

/** A pid is a few digits; anything larger in a pidfile is not ours. */
const PIDFILE_MAX_BYTES = 64

/**
 * Running = pidfile's pid alive and running this VM; a stale pidfile is removed. Synchronous: a
 * listing asks this of every VM on every call, and it is a few system calls; the pidfile is
 * checked before it is read, so a FIFO planted there reads as no pidfile instead of a stall.
 */
export const readRunState = (vm: VmRef): RunState => {
  const pidfile = pidfileOf(vm)
  let text: string
  try {
    text = readSmallFileSync(pidfile, PIDFILE_MAX_BYTES)
  } catch {
    return { running: false }
  }
  const pid = Number.parseInt(text.trim(), 10)
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && ownsVm(pid, vm)) {
    const startedAt = startedAtOf(pidfile)
    return { running: true, pid, ...(startedAt !== undefined ? { startedAt } : {}) }
  }
  try {
    unlinkSync(pidfile)
  } catch {
    // Gone already.
  }
  return { running: false }
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
