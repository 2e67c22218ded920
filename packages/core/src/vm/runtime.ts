import { stat } from "node:fs/promises"
import { readFileSync } from "node:fs"
import { isAbsolute, join } from "node:path"
import { Effect } from "effect"
import { DataRoot, type DataRootPaths } from "../platform/data-root.js"
import * as fs from "../platform/fs.js"
import { Broken, NotRunning, type StoatError } from "../errors.js"
import { Hypervisor, type BootPlan, type VmDisk, type VmRef } from "../ports/hypervisor.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { clientKeyPair, guestHostKeyPair } from "../platform/keys.js"
import type { SshTarget } from "../ports/guest-transport.js"
import { diskSizeBytes, type VmConfig } from "./config.js"
import { VmStore, type VmRecord } from "./store.js"
import { unknownGuestReason } from "./view.js"
import { Guests } from "../guest/definitions.js"
import { resolveConsolePassword, writeSeedIso } from "../cloudinit/index.js"
import { firstBootUserData } from "../recipes/first-boot.js"
import type { Recipes } from "../recipes/store.js"
import { guestHostname } from "./names.js"

export type OkRecord = Extract<VmRecord, { kind: "ok" }>

export const vmRef = (record: VmRecord): VmRef => ({ name: record.name, dir: record.dir })

/**
 * A VM that must parse and name a known guest: broken ones (as `ls` shows them) answer `broken`
 * with the reason, so nothing acts on — or rewrites — a VM that is not whole.
 */
export const loadVm = (name: string): Effect.Effect<OkRecord, Broken | fs.FsError, VmStore | Guests> =>
  Effect.gen(function* () {
    const record = yield* (yield* VmStore).get(name)
    const reason =
      record.kind === "broken"
        ? record.reason
        : record.config.os === ""
          ? undefined
          : yield* Effect.flatMap(Guests, (guests) => guests.get(record.config.os)).pipe(
              Effect.as(undefined),
              Effect.catchTag("NotFound", () => Effect.succeed(unknownGuestReason(record.config.os)))
            )
    if (reason === undefined) return record as OkRecord
    return yield* new Broken({ message: `VM "${name}" is broken: ${reason}; fix or delete it (stoat rm ${name})`, subject: name })
  })

export const isRunning = (record: VmRecord) => Effect.map(Effect.flatMap(Hypervisor, (h) => h.status(vmRef(record))), (s) => s.running)

export const requireRunning = (record: OkRecord): Effect.Effect<void, NotRunning, Hypervisor> =>
  Effect.flatMap(isRunning(record), (running) =>
    running ? Effect.void : Effect.fail(new NotRunning({ message: `VM "${record.name}" is not running; start it with stoat up ${record.name}`, subject: record.name }))
  )

/** Names the overlay a VM writes to after a checkpoint (relative to its folder); absent until the first one. */
export const topPointerPath = (dir: string): string => join(dir, "disk.top")

/**
 * The disk file a VM writes to: `disk.qcow2`, or after a checkpoint the overlay `disk.top` names
 * (a checkpoint freezes the file the VM wrote to, which the running QEMU still reads by its name,
 * so the new top gets a new name rather than the old file being moved).
 */
export const diskPath = (record: VmRecord): string => join(record.dir, diskFile(record))

/** The disk file a VM writes to, relative to its folder (see diskPath). */
export const diskFile = (record: VmRecord): string => readTopPointer(record.dir) ?? DISK_FILE

/** The name of a VM's first disk in its folder. */
const DISK_FILE = "disk.qcow2"

/** The disk a VM writes to, as the hypervisor addresses it. */
export const vmDisk = (record: VmRecord): VmDisk => ({ vm: vmRef(record), file: diskFile(record) })

/** The disk a new VM (its folder being made) starts with. */
export const firstDisk = (vm: VmRef): VmDisk => ({ vm, file: DISK_FILE })

const readTopPointer = (dir: string): string | undefined => {
  try {
    const top = readFileSync(topPointerPath(dir), "utf8").trim()
    // Only a plain path inside the VM folder counts: the pointer is ours, but the folder is the user's.
    return top !== "" && !isAbsolute(top) && !top.split("/").includes("..") ? top : undefined
  } catch {
    return undefined
  }
}

export const sshTarget = (root: DataRootPaths, record: OkRecord): SshTarget => ({
  vm: record.name,
  port: record.config.sshport,
  user: record.config.sshuser === "" ? "root" : record.config.sshuser,
  privateKeyPath: root.clientKey
})

/** What to boot: vm.toml plus the image, keys and shares, resolved to paths for the provider. */
export const bootPlan = (record: OkRecord, display: "window" | "vnc"): Effect.Effect<BootPlan, StoatError, DataRoot | Hypervisor | ImageBuilder | Guests | Recipes | VmStore> =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const hypervisor = yield* Hypervisor
    const config: VmConfig = record.config
    const workShare = root.sharedDir(record.name)
    yield* fs.makeDirectory(workShare)
    const base = {
      vm: vmRef(record),
      ramMb: config.ram,
      cpus: config.cpus,
      sshPort: config.sshport,
      forwards: config.forwards.map((forward) => ({ host: forward.hostport, guest: forward.guestport })),
      workShare,
      display,
      ...(config.share !== "" ? { hostShare: config.share } : {}),
      ...(config.shares.length > 0 ? { extraShares: config.shares.map((share) => ({ tag: share.tag, host: share.host })) } : {}),
      ...(config.cpu_model ? { cpuModel: config.cpu_model } : {}),
      ...(config.mode !== "live" ? { disk: diskFile(record) } : {})
    }
    if (config.backend === "direct") {
      // A VM with a base boots the build its disk was made from (its kernel matches the disk's modules).
      const image = yield* (yield* ImageBuilder).build(config.image === "" ? "tiny" : config.image, config.base !== "" ? { rootDisk: config.base } : undefined)
      const keys = yield* clientKeyPair(root)
      const hostKey = yield* guestHostKeyPair(root)
      return {
        ...base,
        kernel: { path: image.kernel, initrd: image.initrd, append: image.append },
        guestIdentity: { authorizedKeys: keys.publicKey, hostKeyPath: hostKey.privateKeyPath, hostname: guestHostname(record.name) }
      }
    }
    if (config.mode === "cloud") {
      // The overlay on the shared base is made at first start, so a never-started VM costs nothing.
      const exists = yield* Effect.promise(() => stat(diskPath(record)).then(() => true, () => false))
      if (!exists) {
        if (config.base === "") return yield* new Broken({ message: `VM "${record.name}" is a cloud VM without a base image`, subject: record.name })
        const baseImage = { image: config.base }
        const baseSize = (yield* hypervisor.diskInfo(baseImage)).virtualSize
        yield* hypervisor.createDisk(vmDisk(record), String(Math.max(baseSize, diskSizeBytes(config.disk))), baseImage)
      }
      return { ...base, disk: diskFile(record), seedIso: yield* ensureSeed(record) }
    }
    return config.iso !== "" ? { ...base, cdrom: config.iso, bootFromCdrom: !config.installed } : base
  })

/** The NoCloud seed, written once at first start; a clone gets its own (new instance-id) at its first start. */
const ensureSeed = (record: OkRecord) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const path = join(record.dir, "ovl", "seed.iso")
    if (yield* Effect.promise(() => stat(path).then(() => true, () => false))) return path
    const guest = yield* Effect.flatMap(Guests, (guests) => guests.get(record.config.os))
    const keys = yield* clientKeyPair(root)
    // Recipes the VM is created with run at first boot; later changes go over ssh.
    const firstBoot = yield* firstBootUserData(record)
    yield* writeSeedIso({
      path,
      vmName: record.name,
      user: record.config.sshuser === "" ? "stoat" : record.config.sshuser,
      shell: guest.shell,
      authorizedKey: keys.publicKey,
      consolePassword: resolveConsolePassword(record.config.console_password),
      userDataExtra: firstBoot === undefined ? undefined : [firstBoot],
      seedDir: join(record.dir, "ovl", "seed")
    })
    return path
  })
