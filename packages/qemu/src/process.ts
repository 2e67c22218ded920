import { readFile, stat, unlink } from "node:fs/promises"
import { join } from "node:path"
import type { RunState, VmRef } from "@stoat/core"

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
export const ownsVm = async (pid: number, vm: VmRef): Promise<boolean> => {
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")
  return cmdline.includes(`${vm.dir}/`)
}

/** Running = pidfile's pid alive and running this VM; a stale pidfile is removed. */
export const readRunState = async (vm: VmRef): Promise<RunState> => {
  const pidfile = pidfileOf(vm)
  const [text, info] = await Promise.all([readFile(pidfile, "utf8").catch(() => undefined), stat(pidfile).catch(() => undefined)])
  if (text === undefined) return { running: false }
  const pid = Number.parseInt(text.trim(), 10)
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid) && (await ownsVm(pid, vm))) {
    return { running: true, pid, ...(info ? { startedAt: info.mtime.toISOString() } : {}) }
  }
  await unlink(pidfile).catch(() => undefined)
  return { running: false }
}
