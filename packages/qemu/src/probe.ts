import { execFile } from "node:child_process"
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { AccelProbe } from "@stoat/core"

/**
 * A 512-byte boot sector that writes 3 to the isa-debug-exit port, so QEMU exits with status 7
 * as soon as the guest CPU runs: `mov al,3; out 0xf4,al; hlt; jmp $-1`.
 */
const bootSector = (): Buffer => {
  const sector = Buffer.alloc(512)
  Buffer.from([0xb0, 0x03, 0xe6, 0xf4, 0xf4, 0xeb, 0xfd]).copy(sector)
  sector[510] = 0x55
  sector[511] = 0xaa
  return sector
}

const EXPECTED_STATUS = 7

const bootOnce = (qemu: string, image: string, accel: "kvm" | "tcg", timeoutMs: number) =>
  new Promise<{ ok: boolean; detail: string }>((resolve) => {
    execFile(
      qemu,
      ["-accel", accel, "-M", "pc", "-nodefaults", "-display", "none", "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-drive", `file=${image},format=raw,if=floppy`],
      { timeout: timeoutMs, killSignal: "SIGKILL" },
      (error, _stdout, stderr) => {
        const status = (error as { code?: unknown } | null)?.code
        if (status === EXPECTED_STATUS) return resolve({ ok: true, detail: "" })
        if ((error as { killed?: boolean } | null)?.killed) return resolve({ ok: false, detail: `probe boot did not finish in ${timeoutMs} ms` })
        resolve({ ok: false, detail: stderr.trim().split("\n").pop() ?? `exit ${String(status)}` })
      }
    )
  })

/**
 * Whether KVM really works: `/dev/kvm` can exist and still hang or abort (nested virtualisation),
 * so we boot a one-instruction guest under KVM with a short deadline. Otherwise TCG.
 */
export const probeAccelerator = async (qemu: string, timeoutMs = 3000): Promise<AccelProbe> => {
  const dir = await mkdtemp(join(tmpdir(), "stoat-probe-"))
  try {
    const image = join(dir, "probe.img")
    await writeFile(image, bootSector())
    const kvm = await bootOnce(qemu, image, "kvm", timeoutMs)
    if (kvm.ok) return { accel: "kvm", detail: "KVM works (probe boot finished)" }
    return { accel: "tcg", detail: `KVM unusable (${kvm.detail}); VMs run under TCG, which is slower` }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

const bootId = () => readFile("/proc/sys/kernel/random/boot_id", "utf8").then((text) => text.trim(), () => "")

/** The probe result cached per host boot, so starting a VM does not pay for a probe each time. */
export const cachedProbe = async (qemu: string, cacheFile: string): Promise<AccelProbe> => {
  const boot = await bootId()
  const cached = await readFile(cacheFile, "utf8").then((text) => JSON.parse(text) as AccelProbe & { boot: string; qemu: string }, () => undefined)
  if (cached && cached.boot === boot && cached.qemu === qemu && boot !== "") return { accel: cached.accel, detail: cached.detail }
  const probe = await probeAccelerator(qemu)
  await writeFile(cacheFile, JSON.stringify({ ...probe, boot, qemu })).catch(() => undefined)
  return probe
}
