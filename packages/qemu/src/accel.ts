import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either } from "effect"
import type { Acceleration } from "@stoat/core"
import { runChild } from "./child.js"
import { stderrMessage } from "./run.js"
import { readTinyGuest } from "./tiny/build.js"
import { CpioWriter } from "./tiny/cpio.js"

/**
 * Whether KVM can run a VM. `/dev/kvm` may exist and still be useless: under a nested
 * `kvm-pvm` host a real-mode boot sector, and even a small long-mode payload, run fine while
 * a 64-bit Linux kernel hangs or stops with "KVM internal error". So the probe boots a real
 * guest kernel with a one-line init when one is at hand, and a long-mode payload otherwise
 * (said so in the verdict), and the start of each VM keeps watching (see lifecycle.ts).
 */

/** Printed by the probe's init (kernel probe) or payload (no kernel); nothing else prints it. */
export const PROBE_MARKER = "STOAT-ACCEL-PROBE-OK"

/** QEMU's `-name` for probe runs, so a test wrapper can tell a probe from a VM. */
export const PROBE_NAME = "stoat-accel-probe"

export const DEFAULT_PROBE_TIMEOUT_MS = 4_000

export type AccelSetting = "auto" | "kvm" | "tcg"

/** How a verdict was reached: which probe ran, or a VM that did not run under KVM, or STOAT_ACCEL. */
export type VerdictSource = "kernel" | "payload" | "start" | "setting"

export interface AccelVerdict extends Acceleration {
  readonly source: VerdictSource
}

const STDOUT_CAP = 65_536

/** The 64-bit Linux executable the kernel probe runs as /init: `write(1, marker)`, then `exit(0)`. */
const probeInit = (): Buffer => {
  const message = Buffer.from(`${PROBE_MARKER}\n`)
  const code = Buffer.concat([
    Buffer.from([0xb8, 0x01, 0x00, 0x00, 0x00]), // mov eax, 1 (write)
    Buffer.from([0xbf, 0x01, 0x00, 0x00, 0x00]), // mov edi, 1
    Buffer.from([0x48, 0x8d, 0x35, 0x12, 0x00, 0x00, 0x00]), // lea rsi, [rip + 18] → message
    Buffer.from([0xba, message.length, 0x00, 0x00, 0x00]), // mov edx, len
    Buffer.from([0x0f, 0x05]), // syscall
    Buffer.from([0xb8, 0x3c, 0x00, 0x00, 0x00]), // mov eax, 60 (exit)
    Buffer.from([0x31, 0xff]), // xor edi, edi
    Buffer.from([0x0f, 0x05]), // syscall
    Buffer.from([0xeb, 0xfe]), // jmp $
    message
  ])
  return elf64({ code })
}

/**
 * The no-kernel fallback: a PVH ELF entered in 32-bit protected mode that builds identity page
 * tables, enters long mode, runs a short loop with calls, writes the marker to COM1 and exits
 * through isa-debug-exit. Linked for 0x100000 (the addresses inside are absolute). Its source is
 * accel-payload.S beside this file; this is that file assembled.
 */
export const LONG_MODE_PAYLOAD_HEX =
  "fabf0000010031c0b9000c0000f3abc7050000010003100100c7050010010003200100c70500200100830000000f20e083c8200f22e0b8000001000f22d8b9800000c00f320d000100000f300f20c00d010000800f22c00f0115c0001000ea65001000080066b810008ed88ed048c7c4000009004831db48c7c140420f004801cbe81d000000e2f6488d353700000066baf803ac84c07403eeebf866baf400b003eef4c30f1f4000000000000000000000000000009a200000000000009200001700a8001000"

const longModePayload = (): Buffer =>
  elf64({
    vaddr: 0x100000,
    code: Buffer.concat([Buffer.from(LONG_MODE_PAYLOAD_HEX, "hex"), Buffer.from(`${PROBE_MARKER}\n\0`)]),
    pvhEntry: true
  })

/**
 * A one-segment static ELF64 for x86-64 whose entry point is the first byte of `code`. Without
 * `vaddr` the code loads at 0x400000 plus its file offset, which keeps the two congruent modulo
 * the page size as Linux's loader requires; QEMU's PVH loader takes any `vaddr`. `pvhEntry`
 * adds the Xen PVH note QEMU's `-kernel` looks for.
 */
const elf64 = (options: { readonly code: Buffer; readonly vaddr?: number; readonly pvhEntry?: boolean }): Buffer => {
  const phnum = options.pvhEntry ? 2 : 1
  const headers = 64 + 56 * phnum
  const noteSize = options.pvhEntry ? 20 : 0
  const codeOffset = Math.ceil((headers + noteSize) / 16) * 16
  const vaddr = options.vaddr ?? 0x400000 + codeOffset
  const note = options.pvhEntry ? pvhNote(vaddr) : Buffer.alloc(0)
  const header = Buffer.alloc(codeOffset)
  header.write("\x7fELF", 0, "latin1")
  header.writeUInt8(2, 4) // 64-bit
  header.writeUInt8(1, 5) // little endian
  header.writeUInt8(1, 6) // version
  header.writeUInt16LE(2, 16) // ET_EXEC
  header.writeUInt16LE(62, 18) // x86-64
  header.writeUInt32LE(1, 20)
  header.writeBigUInt64LE(BigInt(vaddr), 24)
  header.writeBigUInt64LE(64n, 32) // program headers right after this header
  header.writeUInt16LE(64, 52)
  header.writeUInt16LE(56, 54)
  header.writeUInt16LE(phnum, 56)
  const segment = (
    at: number,
    type: number,
    flags: number,
    offset: number,
    vaddr: number,
    size: number,
    align: number
  ) => {
    header.writeUInt32LE(type, at)
    header.writeUInt32LE(flags, at + 4)
    header.writeBigUInt64LE(BigInt(offset), at + 8)
    header.writeBigUInt64LE(BigInt(vaddr), at + 16)
    header.writeBigUInt64LE(BigInt(vaddr), at + 24)
    header.writeBigUInt64LE(BigInt(size), at + 32)
    header.writeBigUInt64LE(BigInt(size), at + 40)
    header.writeBigUInt64LE(BigInt(align), at + 48)
  }
  segment(64, 1, 7, codeOffset, vaddr, options.code.length, 0x1000) // PT_LOAD, rwx
  if (options.pvhEntry) {
    segment(120, 4, 4, headers, 0, note.length, 4) // PT_NOTE
    note.copy(header, headers)
  }
  return Buffer.concat([header, options.code])
}

/** XEN_ELFNOTE_PHYS32_ENTRY: the 32-bit physical entry point of a PVH kernel. */
const pvhNote = (entry: number): Buffer => {
  const note = Buffer.alloc(20)
  note.writeUInt32LE(4, 0) // name size ("Xen\0")
  note.writeUInt32LE(4, 4) // descriptor size
  note.writeUInt32LE(18, 8) // type
  note.write("Xen\0", 12, "latin1")
  note.writeUInt32LE(entry, 16)
  return note
}

/** An initramfs with just /dev/console and the probe's /init (which prints PROBE_MARKER and exits). */
export const probeInitramfs = (): Buffer =>
  new CpioWriter().dir("dev").charDevice("dev/console", 5, 1).file("init", probeInit(), 0o755).finish()

interface ProbeRun {
  readonly outcome: "marker" | "internal-error" | "exited" | "timeout" | "spawn-failed"
  readonly stderr: string
  readonly ms: number
}

/** Runs one probe QEMU with its serial console on stdout; stops it at the marker, an internal error or the deadline. */
const runProbe = async (qemu: string, args: ReadonlyArray<string>, timeoutMs: number): Promise<ProbeRun> => {
  const started = performance.now()
  /** The serial console's tail: enough to hold the marker across chunks. */
  let serial = ""
  let outcome: ProbeRun["outcome"] | undefined
  const exit = await Effect.runPromise(
    Effect.either(
      runChild(qemu, args, {
        timeoutMs,
        onStdout: (chunk) => {
          serial = (serial + chunk.toString("latin1")).slice(-STDOUT_CAP)
          if (serial.includes(PROBE_MARKER)) return ((outcome = "marker"), "stop")
        },
        // QEMU reports the error and pauses the guest; it would sit there until the deadline.
        onStderr: (_chunk, stderr) =>
          /KVM internal error/i.test(stderr) ? ((outcome ??= "internal-error"), "stop") : undefined
      })
    )
  )
  const ms = Math.round(performance.now() - started)
  if (Either.isLeft(exit)) return { outcome: "spawn-failed", stderr: exit.left.message, ms }
  const ended = exit.right
  return { outcome: outcome ?? (ended.timedOut ? "timeout" : "exited"), stderr: ended.stderr.trim(), ms }
}

/** The verdict in words a person can act on. */
const verdictOf = (run: ProbeRun, source: "kernel" | "payload", timeoutMs: number): AccelVerdict => {
  const what = source === "kernel" ? "a 64-bit guest kernel" : "a 64-bit test payload"
  switch (run.outcome) {
    case "marker":
      return {
        accel: "kvm",
        source,
        detail:
          source === "kernel"
            ? `KVM works (${what} booted in ${(run.ms / 1000).toFixed(1)} s)`
            : `KVM runs ${what}; no guest kernel was tried yet (stoat pull tiny builds one), and a VM that does not run under KVM is restarted under TCG`
      }
    case "internal-error":
      return {
        accel: "tcg",
        source,
        detail: "KVM present but a 64-bit guest does not run: KVM internal error; VMs run under TCG, which is slower"
      }
    case "timeout":
      return {
        accel: "tcg",
        source,
        detail: `KVM present but a 64-bit guest does not run: no console output in ${Math.round(timeoutMs / 1000)} s; VMs run under TCG, which is slower`
      }
    default:
      return {
        accel: "tcg",
        source,
        detail: `KVM unusable (${stderrMessage(run.stderr, "QEMU exited under -accel kvm", { lines: 1, skipWarnings: true })}); VMs run under TCG, which is slower`
      }
  }
}

/**
 * Boots `kernel` (the tiny guest's, when built) with a one-line init under KVM, or the
 * long-mode payload when no kernel is given; the marker on the serial console within the
 * deadline means KVM works, anything else means TCG with the reason.
 */
export const probeKvm = async (
  qemu: string,
  options: { readonly kernel?: string | undefined; readonly timeoutMs?: number } = {}
): Promise<AccelVerdict> => {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS
  const dir = await mkdtemp(join(tmpdir(), "stoat-probe-"))
  try {
    const common = [
      "-name",
      PROBE_NAME,
      "-accel",
      "kvm",
      "-nodefaults",
      "-display",
      "none",
      "-no-reboot",
      "-serial",
      "stdio",
      "-m",
      "128"
    ]
    if (options.kernel !== undefined) {
      const initrd = join(dir, "probe.cpio")
      await writeFile(initrd, probeInitramfs())
      const args = [
        ...common,
        "-M",
        "q35",
        "-bios",
        "qboot.rom",
        "-kernel",
        options.kernel,
        "-initrd",
        initrd,
        "-append",
        "console=ttyS0 panic=-1 quiet"
      ]
      return verdictOf(await runProbe(qemu, args, timeoutMs), "kernel", timeoutMs)
    }
    const payload = join(dir, "probe.elf")
    await writeFile(payload, longModePayload())
    const args = [...common, "-M", "pc", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-kernel", payload]
    return verdictOf(await runProbe(qemu, args, timeoutMs), "payload", timeoutMs)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * The kernel a KVM probe boots: the VM's own when it boots one directly, else the tiny guest's
 * when it is built under `tinyCacheDir`, else none (the probe falls back to its payload).
 */
export const probeKernel = (
  kernel: { readonly path: string } | undefined,
  tinyCacheDir: string
): Effect.Effect<string | undefined> =>
  kernel !== undefined
    ? Effect.succeed(kernel.path)
    : Effect.promise(() => readTinyGuest(join(tinyCacheDir, "image")).then((image) => image?.kernel))

/** Reads STOAT_ACCEL; undefined when the value is none of auto, kvm, tcg. */
export const accelSetting = (raw: string | undefined): AccelSetting | undefined => {
  const value = (raw ?? "").trim().toLowerCase()
  if (value === "") return "auto"
  return value === "auto" || value === "kvm" || value === "tcg" ? value : undefined
}

interface CachedVerdict extends AccelVerdict {
  readonly boot: string
  readonly qemu: string
}

const bootId = () =>
  readFile("/proc/sys/kernel/random/boot_id", "utf8").then(
    (text) => text.trim(),
    () => ""
  )

/**
 * The verdict cached per host boot and QEMU binary. A payload verdict is probed again once a
 * guest kernel exists; a verdict recorded by a failed start stands until the host reboots.
 */
export class AccelCache {
  constructor(private readonly file: string) {}

  async read(qemu: string): Promise<AccelVerdict | undefined> {
    const boot = await bootId()
    // A missing, truncated or foreign file is no verdict: probe again.
    const cached = await readFile(this.file, "utf8")
      .then((text) => JSON.parse(text) as Partial<CachedVerdict> | null)
      .catch(() => undefined)
    if (!cached || boot === "" || cached.boot !== boot || cached.qemu !== qemu) return undefined
    if ((cached.accel !== "kvm" && cached.accel !== "tcg") || typeof cached.detail !== "string") return undefined
    const source =
      cached.source === "kernel" || cached.source === "payload" || cached.source === "start" ? cached.source : "payload"
    return { accel: cached.accel, detail: cached.detail, source }
  }

  async write(qemu: string, verdict: AccelVerdict): Promise<void> {
    const record: CachedVerdict = { ...verdict, boot: await bootId(), qemu }
    // Best effort, and in place: an unwritable or missing data root (doctor never creates one)
    // only costs a probe next time, and a torn file reads as no verdict.
    await writeFile(this.file, JSON.stringify(record)).catch(() => undefined)
  }

  /** The cached verdict, or a new probe (cached) when there is none or a kernel can now improve a payload verdict. */
  async verdict(qemu: string, kernel: string | undefined): Promise<AccelVerdict> {
    const cached = await this.read(qemu)
    if (cached && !(cached.source === "payload" && kernel !== undefined)) return cached
    const fresh = await probeKvm(qemu, { kernel })
    await this.write(qemu, fresh)
    return fresh
  }
}
