import { randomBytes } from "node:crypto"
import { mkdir, readFile, rm, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect, Option, Schedule } from "effect"
import { AcceleratorUnusable, pollWithin, writeFileAtomic, type Acceleration, type InvalidSpec } from "@stoat/core"
import {
  accelSettingConfig,
  DEFAULT_PROBE_TIMEOUT_MS,
  PROBE_MARKER,
  probeInitramfs,
  type AccelSetting
} from "@stoat/qemu"
import { probeDomainXml } from "./domain-xml.js"
import { virsh, virshError, type VirshUnavailable } from "./virsh.js"

/** What the probe found: KVM runs a 64-bit guest kernel there, or TCG with the reason. */
export interface KvmVerdict {
  readonly accel: "kvm" | "tcg"
  readonly detail: string
}

type Seen = "waiting" | "marker" | "paused" | "ended"

const PROBE_POLL_MS = 100
/** The console is read every poll (a file); libvirt is asked for the domain's state only every so many (a virsh call). */
const STATE_EVERY = 5

/**
 * Whether KVM on the libvirt host at `uri` runs a 64-bit guest: a transient domain boots `kernel`
 * with a one-line init under KVM, as the QEMU provider's probe does on this machine, and its
 * marker on the console within the deadline says yes. A domain libvirt refuses, one that QEMU
 * pauses (KVM internal error), one that ends silent, or silence until the deadline says no, and
 * why. The probe's files go under `dir`, which the host must see at the same path (as it sees the
 * VM folders); the domain is destroyed and the files removed whatever happens.
 */
export const probeKvmOn = (
  uri: string,
  options: { readonly dir: string; readonly kernel: string; readonly timeoutMs?: number }
): Effect.Effect<KvmVerdict, VirshUnavailable> => {
  const id = randomBytes(4).toString("hex")
  const dir = join(options.dir, id)
  const name = `stoat-accel-probe-${id}`
  const files = { initrd: join(dir, "probe.cpio"), console: join(dir, "console.log"), xml: join(dir, "probe.xml") }
  const timeoutMs = options.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS
  const prepare = Effect.promise(async () => {
    await mkdir(dir, { recursive: true })
    await writeFile(files.initrd, probeInitramfs())
    const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 }
    await writeFile(files.xml, probeDomainXml({ name, kernel: options.kernel, ...files, ...owner }))
  })
  const printedMarker = Effect.promise(() =>
    readFile(files.console, "latin1").then(
      (text) => text.includes(PROBE_MARKER),
      () => false
    )
  )
  let polls = 0
  const look: Effect.Effect<Seen, VirshUnavailable> = Effect.gen(function* () {
    if (yield* printedMarker) return "marker"
    if (++polls % STATE_EVERY !== 0) return "waiting"
    const state = yield* virsh(uri, ["domstate", name])
    if (state.code !== 0) return "ended"
    const now = state.stdout.trim()
    return now === "paused" ? "paused" : now === "shut off" || now === "crashed" ? "ended" : "waiting"
  })
  const run = Effect.gen(function* () {
    yield* prepare
    const created = yield* virsh(uri, ["create", files.xml])
    if (created.code !== 0)
      return tcg(`libvirt host ${uri} lists KVM but refused a KVM domain (${virshError(created)})`)
    const seen = yield* pollWithin(look, {
      schedule: Schedule.spaced(PROBE_POLL_MS),
      until: (state) => state !== "waiting",
      within: timeoutMs
    })
    // A domain that ended may have printed the marker just before: the console has the last word.
    const outcome = Option.getOrElse(seen, (): Seen => "waiting")
    const final = outcome === "ended" && (yield* printedMarker) ? "marker" : outcome
    switch (final) {
      case "marker":
        return {
          accel: "kvm" as const,
          detail: `KVM works on libvirt host ${uri} (a 64-bit guest kernel booted under it)`
        }
      case "paused":
        return tcg(`libvirt host ${uri} lists KVM but a 64-bit guest does not run under it: KVM internal error`)
      case "ended":
        return tcg(`libvirt host ${uri} lists KVM but a 64-bit guest does not run under it: it ended without output`)
      default:
        return tcg(
          `libvirt host ${uri} lists KVM but a 64-bit guest does not run under it: no console output in ${Math.round(timeoutMs / 1000)} s`
        )
    }
  })
  return run.pipe(
    Effect.ensuring(
      Effect.zipRight(
        Effect.ignore(virsh(uri, ["destroy", name])),
        Effect.promise(() => rm(dir, { recursive: true, force: true }))
      )
    )
  )
}

const tcg = (detail: string): KvmVerdict => ({ accel: "tcg", detail: `${detail}; domains there are type qemu (TCG)` })

/**
 * What starts learned of each libvirt host's KVM (the probe's verdict, or a VM that did not run
 * under it), kept per URI in the data root. A torn or foreign file is no verdict: probe again.
 */
export class AccelVerdicts {
  constructor(private readonly path: string) {}
  read = (uri: string): Effect.Effect<KvmVerdict | undefined> =>
    Effect.promise(() =>
      readFile(this.path, "utf8")
        .then((text) => storedVerdict((JSON.parse(text) as Record<string, unknown> | null)?.[uri]))
        .catch(() => undefined)
    )
  write = (uri: string, verdict: KvmVerdict): Effect.Effect<void> =>
    Effect.promise(async () => {
      const all = await readFile(this.path, "utf8").then(
        (text) => JSON.parse(text) as Record<string, unknown>,
        () => ({})
      )
      await writeFileAtomic(this.path, JSON.stringify({ ...all, [uri]: verdict })).catch(() => undefined)
    })
}

/** A verdict as stored; the earlier form, a bare string, was the reason for TCG. */
const storedVerdict = (value: unknown): KvmVerdict | undefined => {
  if (typeof value === "string") return { accel: "tcg", detail: value }
  if (typeof value !== "object" || value === null) return undefined
  const { accel, detail } = value as Record<string, unknown>
  return (accel === "kvm" || accel === "tcg") && typeof detail === "string" ? { accel, detail } : undefined
}

/** What KVM/TCG a libvirt host offers, and what a VM starts under there: the setting, a verdict a start learned, or the host's capabilities. */
export const decideAccel = (
  verdicts: AccelVerdicts,
  uri: string
): Effect.Effect<
  Acceleration & { readonly setting: AccelSetting; readonly learned: boolean },
  InvalidSpec | AcceleratorUnusable | VirshUnavailable
> =>
  Effect.gen(function* () {
    const setting = yield* accelSettingConfig
    if (setting === "tcg")
      return {
        setting,
        learned: false,
        accel: "tcg" as const,
        detail: `STOAT_ACCEL=tcg: libvirt domains on ${uri} are type qemu (TCG)`
      }
    const caps = yield* virsh(uri, ["capabilities"])
    const hasKvm = caps.code === 0 && caps.stdout.includes("<domain type='kvm'")
    if (setting === "kvm") {
      return hasKvm
        ? {
            setting,
            learned: false,
            accel: "kvm" as const,
            detail: `STOAT_ACCEL=kvm: libvirt domains on ${uri} are type kvm`
          }
        : yield* new AcceleratorUnusable({
            message: `libvirt host ${uri} offers no KVM (no kvm domain type in virsh capabilities); enable KVM there, or set STOAT_ACCEL=tcg (slower)`,
            subject: uri
          })
    }
    const learned = hasKvm ? yield* verdicts.read(uri) : undefined
    if (learned !== undefined) return { setting, learned: true, ...learned }
    return hasKvm
      ? {
          setting,
          learned: false,
          accel: "kvm" as const,
          detail: `libvirt host ${uri} offers KVM (STOAT_ACCEL=auto); no guest has run under it yet`
        }
      : {
          setting,
          learned: false,
          accel: "tcg" as const,
          detail: `libvirt host ${uri} offers no KVM: domains are type qemu (TCG), which is slower (STOAT_ACCEL=auto)`
        }
  })

/** The verdicts of the data root at `root`. */
export const verdictsIn = (root: string) => new AccelVerdicts(join(root, ".libvirt-accel.json"))

/** Where KVM probes keep their files while they run: in the data root, which a libvirt host sees at the same path. */
export const probeDirIn = (root: string) => join(root, ".libvirt-probe")

/**
 * What VMs start under on `uri`, learned where it can be: a host that lists KVM is probed once
 * (a guest kernel under KVM, see probeKvmOn) before its first VM, since nested hosts list a KVM
 * that passes trivial checks and then stops a 64-bit kernel part way through its boot. The
 * verdict is kept; `fresh` says this call probed. Without a kernel to boot, the host's listing stands.
 */
export const learnAccel = (
  verdicts: AccelVerdicts,
  uri: string,
  options: { readonly probeDir: string; readonly kernel: Effect.Effect<string | undefined> }
) =>
  Effect.gen(function* () {
    const decided = yield* decideAccel(verdicts, uri)
    if (decided.accel === "tcg" || decided.setting === "kvm" || decided.learned) return { ...decided, fresh: false }
    const kernel = yield* options.kernel
    if (kernel === undefined) return { ...decided, fresh: false }
    const verdict = yield* probeKvmOn(uri, { dir: options.probeDir, kernel })
    yield* verdicts.write(uri, verdict)
    return { ...decided, ...verdict, fresh: true }
  })
