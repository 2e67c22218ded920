/**
 * `stoat up --wait` reaches SSH on hosts whose KVM cannot run a guest. A wrapper put first on
 * PATH plays such a host on any machine: it adds `-S` (the CPUs never run) to every QEMU started
 * with `-accel kvm`, so the guest only ever runs under TCG, whatever /dev/kvm does here.
 */
import { execFileSync } from "node:child_process"
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { homedir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { envelopes, result, stoat, tempHome } from "../helpers.js"

const realQemu = () => {
  try {
    return execFileSync("sh", ["-c", "command -v qemu-system-x86_64"], { encoding: "utf8" }).trim()
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

/** Adds -S under -accel kvm; with `passProbe`, answers stoat's accelerator probe as a working KVM would. */
const pausingWrapper = (dir: string, options: { readonly passProbe: boolean }) => {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, "qemu-system-x86_64")
  writeFileSync(
    path,
    `#!/bin/bash
REAL=${JSON.stringify(realQemu())}
echo "$*" >> ${JSON.stringify(join(dir, "calls.log"))}
kvm=; probe=
for a in "$@"; do [ "$a" = kvm ] && kvm=1; [ "$a" = stoat-accel-probe ] && probe=1; done
${options.passProbe ? 'if [ -n "$kvm" ] && [ -n "$probe" ]; then echo STOAT-ACCEL-PROBE-OK; exit 0; fi' : ""}
if [ -n "$kvm" ]; then exec "$REAL" "$@" -S; fi
exec "$REAL" "$@"
`
  )
  chmodSync(path, 0o755)
  return dir
}

describe("a host whose KVM never runs a guest", () => {
  const tinyCache = process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
  const homes: Array<Record<string, string>> = []
  const envFor = (passProbe: boolean) => {
    const home = tempHome()
    const env = {
      STOAT_HOME: home,
      STOAT_TINY_CACHE: tinyCache,
      STOAT_ACCEL: "auto",
      PATH: `${pausingWrapper(join(home, "bin"), { passProbe })}:${process.env["PATH"] ?? ""}`
    }
    homes.push(env)
    return env
  }
  beforeAll(() => void realQemu())
  afterAll(async () => {
    for (const env of homes) await stoat(["down", "vm"], env)
  })

  it("up --wait reaches SSH under TCG when the probe sees KVM's CPUs never run", async () => {
    const env = envFor(false)
    expect((await stoat(["create", "vm", "--image", "tiny"], env)).code).toBe(0)
    const up = await stoat(["--json", "up", "vm", "--wait", "--timeout", "300"], env)
    expect(result(up.stdout)).toMatchObject({ ok: true, data: { vm: { name: "vm", state: "running" } } })
    const pid = Number.parseInt(readFileSync(join(env["STOAT_HOME"]!, "vm", "qemu.pid"), "utf8"), 10)
    expect(readFileSync(`/proc/${pid}/cmdline`, "utf8")).toContain("-accel\0tcg\0")
    const exec = result((await stoat(["--json", "exec", "vm", "--", "echo", "ok"], env)).stdout)
    expect(exec).toMatchObject({ ok: true, data: { exit_code: 0, stdout: "ok\n" } })
    const doctor = result((await stoat(["--json", "doctor"], env)).stdout)
    const kvm = (doctor["data"]["checks"] as Array<{ name: string; ok: boolean; detail: string }>).find(
      (check) => check.name === "kvm"
    )
    expect(kvm?.ok).toBe(false)
    expect(kvm?.detail).toMatch(/^KVM (present but a 64-bit guest does not run: no console output in 4 s|unusable \()/)
  })

  it("a VM that passed the probe but stays silent under KVM is restarted under TCG, and up says so", async () => {
    const env = envFor(true)
    expect((await stoat(["create", "vm", "--image", "tiny"], env)).code).toBe(0)
    const up = await stoat(["--json", "up", "vm", "--wait", "--timeout", "300"], env)
    const lines = envelopes(up.stdout)
    expect(lines.at(-1)).toMatchObject({ ok: true, data: { vm: { state: "running" } } })
    const notice = lines.find((line) => line["type"] === "log")
    expect(notice?.["data"]["line"]).toMatch(
      /^VM "vm" did not run under KVM \((no console output in 4 s|QEMU failed under KVM: .*)\); restarted it under TCG/
    )
    // People see the same on stderr.
    await stoat(["down", "vm"], env)
    writeFileSync(join(env["STOAT_HOME"]!, ".accel-probe.json"), "")
    const human = await stoat(["up", "vm", "--wait"], env)
    expect(human.code).toBe(0)
    expect(human.stderr).toMatch(/did not run under KVM .*restarted it under TCG/)
  })
})
