import { createReadStream } from "node:fs"
import { mkdir, open, stat } from "node:fs/promises"
import { connect } from "node:net"
import { relative, resolve } from "node:path"
import type { Duplex } from "node:stream"
import { pipeline } from "node:stream/promises"
import { Clock, Effect, Option, Schedule } from "effect"
import {
  CapabilityUnavailable,
  ControlUnreachable,
  Internal,
  NotRunning,
  pollWithin,
  ProviderStartFailed,
  readPlacement,
  sshJumpOf,
  writeFileAtomic,
  type CheckpointRequest,
  type CheckpointTaken,
  type ResumePlan,
  type VmRef
} from "@stoat/core"
import { openJump } from "@stoat/core/ssh"
import { domainName, escapeXml, libvirtFiles } from "./domain-xml.js"
import { createTransientDomain, destroyDomain, monitor, uriOf } from "./domain.js"
import { virsh, virshError } from "./virsh.js"

/*
 * Checkpoints and forks on libvirt. A checkpoint is libvirt's external snapshot with memory
 * (`snapshot-create-as --memspec --diskspec`, no metadata): the guest pauses while its RAM and
 * device state go to a file in libvirt's save-image format, its disk switches onto a new overlay,
 * and it runs on. A fork cannot be `virsh restore`d: libvirt restores a saved state only under
 * the saved domain's UUID, which its running source holds. So the fork is a new transient domain
 * with the source's devices, started with `-incoming defer`, and QEMU's own migration stream
 * (the part of the save image after libvirt's header) is fed to it over TCP on its host's
 * loopback: directly for a local host, through the ssh jump for a qemu+ssh:// one.
 */

/** A checkpoint's RAM and device state, in the checkpoint folder. */
const STATE_FILE = "state"

/** libvirt's save image: a 92-byte header, `data_len` bytes of domain XML (and a cookie), then QEMU's stream. */
const SAVE_MAGIC = "LibvirtQemudSave"
const SAVE_HEADER_BYTES = 92

interface SaveImage {
  /** The domain XML libvirt saved: the source's devices, addresses included. */
  readonly xml: string
  /** Where QEMU's migration stream starts in the file. */
  readonly streamOffset: number
}

/** Reads a save image's header and XML; anything else is not a checkpoint this provider wrote. */
export const readSaveImage = (path: string): Effect.Effect<SaveImage, Internal> =>
  Effect.tryPromise({
    try: async () => {
      const file = await open(path, "r")
      try {
        const header = Buffer.alloc(SAVE_HEADER_BYTES)
        const { bytesRead } = await file.read(header, 0, SAVE_HEADER_BYTES, 0)
        if (bytesRead < SAVE_HEADER_BYTES || header.toString("latin1", 0, SAVE_MAGIC.length) !== SAVE_MAGIC)
          throw new Error("not a libvirt save image")
        const dataLength = header.readUInt32LE(20)
        const compressed = header.readUInt32LE(28)
        if (compressed !== 0) throw new Error("a compressed save image")
        if (dataLength > 16 * 1024 * 1024) throw new Error("a save image whose XML is too large")
        const data = Buffer.alloc(dataLength)
        await file.read(data, 0, dataLength, SAVE_HEADER_BYTES)
        const end = data.indexOf(0)
        return {
          xml: data.toString("utf8", 0, end < 0 ? dataLength : end),
          streamOffset: SAVE_HEADER_BYTES + dataLength
        }
      } finally {
        await file.close()
      }
    },
    catch: (cause) =>
      new Internal({
        message: `checkpoint state ${path} is unusable: ${cause instanceof Error ? cause.message : cause}`
      })
  })

/** A path in a virsh `--memspec`/`--diskspec` value, where a comma separates fields (doubled, it is a comma). */
const specPath = (path: string) => path.replaceAll(",", ",,")

/** The file the domain's first disk (vda) reads and writes now, from `virsh domblklist --details`. */
const currentDisk = (uri: string, name: string) =>
  Effect.map(virsh(uri, ["domblklist", name, "--details"]), (result) => {
    for (const line of result.stdout.split("\n")) {
      const [type, device, target, ...source] = line.trim().split(/\s+/)
      if (type === "file" && device === "disk" && target === "vda") return source.join(" ")
    }
    return undefined
  })

/**
 * The port's checkpoint on libvirt. The guest must have no 9p share mounted (QEMU refuses to
 * migrate one): core unmounts them first, and a guest that still has one is capability_unavailable.
 * `pausedMs` is the whole snapshot call, an upper bound of the pause (libvirt reports none).
 */
export const checkpointDomain = (
  vm: VmRef,
  names: CheckpointRequest
): Effect.Effect<CheckpointTaken, NotRunning | CapabilityUnavailable | ControlUnreachable | Internal> =>
  Effect.gen(function* () {
    const uri = uriOf(vm)
    const name = domainName(vm)
    const unreachable = (error: { readonly message: string }) =>
      new ControlUnreachable({ message: error.message, subject: vm.name })
    const disk = resolve(vm.dir, names.disk)
    const top = resolve(vm.dir, names.top)
    const folder = resolve(vm.dir, names.folder)
    const state = resolve(folder, STATE_FILE)
    const writing = yield* currentDisk(uri, name).pipe(Effect.mapError(unreachable))
    if (writing === undefined)
      return yield* new NotRunning({
        message: `VM "${vm.name}" is not running; only a running VM can be checkpointed`,
        subject: vm.name
      })
    if (resolve(writing) !== disk)
      return yield* new Internal({
        message: `VM "${vm.name}" writes to ${writing}, not ${disk}; its disk.top does not match the running domain`,
        subject: vm.name
      })
    yield* Effect.promise(() => mkdir(folder, { recursive: true }))
    const started = yield* Clock.currentTimeMillis
    const taken = yield* virsh(
      uri,
      [
        "snapshot-create-as",
        name,
        "--no-metadata",
        "--memspec",
        `file=${specPath(state)},snapshot=external`,
        "--diskspec",
        `vda,snapshot=external,file=${specPath(top)}`
      ],
      { timeoutMs: 300_000 }
    ).pipe(Effect.mapError(unreachable))
    const pausedMs = (yield* Clock.currentTimeMillis) - started
    if (taken.code !== 0) {
      const why = virshError(taken)
      if (/migrat|9p|VirtFS/i.test(why))
        return yield* new CapabilityUnavailable({
          message: `libvirt cannot save the state of VM "${vm.name}": ${why}`,
          subject: vm.name,
          reason: "migration_blocked"
        })
      if (/not running/i.test(why))
        return yield* new NotRunning({ message: `VM "${vm.name}" is not running`, subject: vm.name })
      return yield* new Internal({ message: `libvirt did not checkpoint VM "${vm.name}": ${why}`, subject: vm.name })
    }
    // The domain writes to `top` from now on: say so before anything else can fail.
    yield* Effect.tryPromise({
      try: () => writeFileAtomic(resolve(vm.dir, names.topPointer), `${relative(vm.dir, top)}\n`),
      catch: () =>
        new Internal({
          message: `VM "${vm.name}" now writes to ${top} but ${names.topPointer} cannot say so`,
          subject: vm.name
        })
    })
    const saved = yield* readSaveImage(state)
    const stateBytes = yield* Effect.promise(() => stat(state).then((info) => info.size))
    return {
      pausedMs,
      stateFile: relative(vm.dir, state),
      stateBytes,
      ramMb: Math.round(kibOf(saved.xml, "memory") / 1024),
      cpus: numberIn(saved.xml, /<vcpu[^>]*>(\d+)<\/vcpu>/)
    }
  })

const numberIn = (xml: string, pattern: RegExp) => Number(pattern.exec(xml)?.[1] ?? 0)
const kibOf = (xml: string, element: string) => {
  const found = new RegExp(`<${element} unit='(\\w+)'>(\\d+)</${element}>`).exec(xml)
  const value = Number(found?.[2] ?? 0)
  return found?.[1] === "MiB" ? value * 1024 : found?.[1] === "GiB" ? value * 1024 * 1024 : value
}

/**
 * The fork's domain: the saved domain's XML (same devices and addresses) with the fork's name,
 * a new UUID and generation ID (the guest reseeds its RNG), its own disk, console, display, work
 * share and ssh forward, and QEMU told to wait for an incoming state.
 */
export const forkDomainXml = (saved: string, source: VmRef, plan: ResumePlan): string => {
  const from = libvirtFiles(source.dir)
  const to = libvirtFiles(plan.vm.dir)
  const replaceAll = (xml: string, what: string, by: string) => xml.replaceAll(escapeXml(what), escapeXml(by))
  let xml = saved
    .replace(/<name>[^<]*<\/name>/, `<name>${escapeXml(domainName(plan.vm))}</name>`)
    .replace(/\s*<uuid>[^<]*<\/uuid>/, "")
    .replace(/<genid>[^<]*<\/genid>/, "<genid/>")
    .replace(/<title>[^<]*<\/title>/, `<title>${escapeXml(plan.vm.name)}</title>`)
    .replace(/<description>[^<]*<\/description>/, `<description>stoat VM ${escapeXml(plan.vm.dir)}</description>`)
    .replace(
      /(<disk type='file' device='disk'>(?:(?!<\/disk>)[\s\S])*?<source file=')[^']*('(?:(?!<\/disk>)[\s\S])*?<target dev='vda')/,
      (_all, before: string, after: string) => `${before}${escapeXml(resolve(plan.vm.dir, plan.disk))}${after}`
    )
    .replace(
      /(<filesystem [^>]*>(?:(?!<\/filesystem>)[\s\S])*?<source dir=')[^']*('(?:(?!<\/filesystem>)[\s\S])*?<target dir='work'\/>)/,
      (_all, before: string, after: string) => `${before}${escapeXml(plan.workShare)}${after}`
    )
    .replace(
      /<qemu:arg value='user,id=stoatnet,[^']*'\/>/,
      `<qemu:arg value='user,id=stoatnet,hostfwd=tcp:127.0.0.1:${plan.sshPort}-:22'/>`
    )
    .replace(
      "</qemu:commandline>",
      "  <qemu:arg value='-incoming'/>\n    <qemu:arg value='defer'/>\n  </qemu:commandline>"
    )
  xml = replaceAll(xml, from.console, to.console)
  xml = replaceAll(xml, from.vnc, to.vnc)
  return xml
}

/** Ports QEMU may listen on for the incoming state on the fork's host; a taken one is tried again with another. */
const incomingPort = () => 20_000 + Math.floor(Math.random() * 30_000)
const INCOMING_TRIES = 3
const MIGRATION_POLL_MS = 50
const MIGRATION_TIMEOUT_MS = 300_000

/** A byte stream to `port` on the loopback of the VM's libvirt host: directly for this machine, through the ssh jump for a remote one. */
const streamTo = (vm: VmRef, port: number): Duplex => {
  const jump = sshJumpOf(readPlacement(vm.dir).host)
  return jump !== undefined ? openJump(jump, port) : connect(port, "127.0.0.1")
}

/**
 * Starts a fork from a checkpoint on libvirt: a new domain with the source's devices waits for
 * the saved state, which is streamed to it; once QEMU has it all, the domain runs on, warm.
 * Whatever fails part way destroys the fork's domain.
 */
export const resumeDomain = (
  checkpoint: { readonly vm: VmRef; readonly folder: string },
  plan: ResumePlan
): Effect.Effect<{ readonly accel: "kvm" | "tcg" }, ProviderStartFailed> => {
  const uri = uriOf(plan.vm)
  const name = domainName(plan.vm)
  const failed = (message: string) => new ProviderStartFailed({ message, subject: plan.vm.name })
  const program = Effect.gen(function* () {
    const state = resolve(checkpoint.vm.dir, checkpoint.folder, STATE_FILE)
    const saved = yield* readSaveImage(state).pipe(Effect.mapError((error) => failed(error.message)))
    yield* createTransientDomain(uri, plan.vm, forkDomainXml(saved.xml, checkpoint.vm, plan)).pipe(
      Effect.catchTags({
        CannotReach: (error) => Effect.fail(failed(error.message)),
        ProviderMissing: (error) => Effect.fail(failed(error.message))
      })
    )
    const control = <A>(command: string, args?: Record<string, unknown>) =>
      monitor<A>(plan.vm, command, args).pipe(Effect.mapError((error) => failed(error.message)))
    let port = incomingPort()
    for (let tries = 1; ; tries++) {
      const listening = yield* Effect.either(control("migrate-incoming", { uri: `tcp:127.0.0.1:${port}` }))
      if (listening._tag === "Right") break
      if (tries >= INCOMING_TRIES || !/in use|bind/i.test(listening.left.message)) return yield* listening.left
      port = incomingPort()
    }
    yield* Effect.tryPromise({
      try: () => pipeline(createReadStream(state, { start: saved.streamOffset }), streamTo(plan.vm, port)),
      catch: (cause) => failed(`the saved state did not reach fork "${plan.vm.name}": ${String(cause)}`)
    })
    const done = yield* pollWithin(control<{ readonly status?: string }>("query-migrate"), {
      schedule: Schedule.spaced(MIGRATION_POLL_MS),
      until: (reply) => reply.status === "completed" || reply.status === "failed",
      within: MIGRATION_TIMEOUT_MS
    })
    const status = Option.getOrUndefined(done)?.status
    if (status !== "completed")
      return yield* failed(`fork "${plan.vm.name}" did not take the saved state (migration ${status ?? "timed out"})`)
    const resumed = yield* virsh(uri, ["resume", name]).pipe(Effect.mapError((error) => failed(error.message)))
    if (resumed.code !== 0) return yield* failed(`fork "${plan.vm.name}" did not resume: ${virshError(resumed)}`)
    return { accel: /^<domain type='kvm'/.test(saved.xml) ? ("kvm" as const) : ("tcg" as const) }
  })
  return program.pipe(Effect.tapError(() => destroyDomain(uri, name)))
}
