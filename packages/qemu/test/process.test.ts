/**
 * Run state from the pidfile and, when that is missing or damaged, from the processes themselves:
 * real processes whose command line carries a VM's `-pidfile` stand in for QEMU.
 */
import { spawn, type ChildProcess } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import type { VmRef } from "@stoat/core"
import { vmFiles } from "../src/argv.js"
import { readRunState } from "../src/process.js"

const root = mkdtempSync(join(tmpdir(), "stoat-runstate-"))
let count = 0
const children: ChildProcess[] = []

const newVm = (): VmRef => {
  const name = `vm${++count}`
  const dir = join(root, name)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir)
  return { name, dir }
}

/** A long-lived process whose arguments are QEMU's as far as ownership goes. */
const fakeQemu = async (args: ReadonlyArray<string>): Promise<number> => {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000); console.log('up')", "--", ...args], {
    stdio: ["ignore", "pipe", "ignore"]
  })
  children.push(child)
  await new Promise((resolve) => child.stdout!.once("data", resolve))
  return child.pid!
}

const kill = async (pid: number) => {
  const child = children.find((c) => c.pid === pid)!
  const exited = new Promise((resolve) => child.once("exit", resolve))
  child.kill("SIGKILL")
  await exited
}

afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL")
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe("readRunState", () => {
  it("trusts a pidfile naming a live process that writes this VM's pidfile", async () => {
    const vm = newVm()
    const files = vmFiles(vm.dir)
    const pid = await fakeQemu(["-qmp", `unix:${files.qmp}`, "-pidfile", files.pidfile])
    writeFileSync(files.pidfile, `${pid}\n`)
    expect(readRunState(vm)).toMatchObject({ running: true, pid })
    expect(readRunState(vm).orphaned).toBeUndefined()
  })

  it("finds the QEMU a garbage or deleted pidfile lost, and calls it orphaned", async () => {
    const vm = newVm()
    const files = vmFiles(vm.dir)
    const pid = await fakeQemu(["-pidfile", files.pidfile])
    writeFileSync(files.pidfile, "garbage\n")
    expect(readRunState(vm)).toEqual({ running: true, pid, orphaned: true })
    writeFileSync(files.pidfile, "999999999\n")
    expect(readRunState(vm)).toEqual({ running: true, pid, orphaned: true })
    // Deleted, with QEMU's QMP socket still there.
    rmSync(files.pidfile)
    writeFileSync(files.qmp, "")
    expect(readRunState(vm)).toEqual({ running: true, pid, orphaned: true })
  })

  it("a process that only mentions the VM's folder (a fork resuming from its checkpoint) is not its QEMU", async () => {
    const vm = newVm()
    const files = vmFiles(vm.dir)
    const fork = await fakeQemu([
      "-incoming",
      `exec:cat '${vm.dir}/checkpoints/c1/state'`,
      "-pidfile",
      join(root, "fork", "qemu.pid")
    ])
    writeFileSync(files.pidfile, `${fork}\n`)
    expect(readRunState(vm)).toMatchObject({ running: false })
  })

  it("a QEMU killed without a shutdown leaves its files: stopped, with them as leftovers, and nothing removed", async () => {
    const vm = newVm()
    const files = vmFiles(vm.dir)
    const pid = await fakeQemu(["-pidfile", files.pidfile])
    for (const path of [files.qmp, files.vnc, files.boot]) writeFileSync(path, "")
    writeFileSync(files.pidfile, `${pid}\n`)
    await kill(pid)
    const state = readRunState(vm)
    expect(state.running).toBe(false)
    expect([...(state.leftovers ?? [])].sort()).toEqual([files.boot, files.pidfile, files.qmp, files.vnc].sort())
    expect(existsSync(files.pidfile)).toBe(true)
  })

  it("after a clean exit (no pidfile, no QMP socket) the VM is stopped with no leftovers, whatever else stays", () => {
    const vm = newVm()
    const files = vmFiles(vm.dir)
    // QEMU leaves its VNC socket and stoat its boot record even after a clean exit.
    writeFileSync(files.vnc, "")
    writeFileSync(files.boot, "{}")
    expect(readRunState(vm)).toEqual({ running: false })
  })
})
