import { join } from "node:path"
import { Effect, Redacted } from "effect"
import { DataRoot } from "../platform/data-root.js"
import * as fs from "../platform/fs.js"
import { Broken, type StoatError } from "../errors.js"
import { Hypervisor, type BootPlan } from "../ports/hypervisor.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { clientKeyPair, guestHostKeyPair } from "../platform/keys.js"
import { diskSizeBytes, sshUserOf, type VmConfig } from "../vm/config.js"
import type { VmStore } from "../vm/store.js"
import { GuestDefinitions } from "../guest-definitions/definitions.js"
import { resolveConsolePassword, writeSeedIso } from "../cloudinit/index.js"
import { firstBootUserData } from "../recipes/first-boot.js"
import type { Recipes } from "../recipes/store.js"
import { guestHostname } from "../vm/names.js"
import { vmRef, type OkRecord } from "../vm/records.js"
import { diskFile, diskPath, vmDisk } from "../vm/disks.js"

/** What to boot: vm.toml plus the image, keys and shares, resolved to paths for the provider. */
export const bootPlan = (
  record: OkRecord,
  display: "window" | "vnc"
): Effect.Effect<BootPlan, StoatError, DataRoot | Hypervisor | ImageBuilder | GuestDefinitions | Recipes | VmStore> =>
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
      ...(config.shares.length > 0
        ? { extraShares: config.shares.map((share) => ({ tag: share.tag, host: share.host })) }
        : {}),
      ...(config.cpu_model ? { cpuModel: config.cpu_model } : {}),
      ...(config.mode !== "live" ? { disk: diskFile(record) } : {})
    }
    if (config.backend === "direct") {
      // A VM with a base boots the build its disk was made from (its kernel matches the disk's modules).
      const image = yield* (yield* ImageBuilder).build(
        config.image === "" ? "tiny" : config.image,
        config.base !== "" ? { rootDisk: config.base } : undefined
      )
      const keys = yield* clientKeyPair(root)
      const hostKey = yield* fs.readFileString((yield* guestHostKeyPair(root)).privateKeyPath)
      return {
        ...base,
        kernel: { path: image.kernel, initrd: image.initrd, append: image.append },
        guestIdentity: {
          authorizedKeys: keys.publicKey,
          hostKey: Redacted.make(hostKey),
          hostname: guestHostname(record.name)
        }
      }
    }
    if (config.mode === "cloud") {
      // The overlay on the shared base is made at first start, so a never-started VM costs nothing.
      const exists = yield* fs.isPresent(diskPath(record))
      if (!exists) {
        if (config.base === "")
          return yield* new Broken({
            message: `VM "${record.name}" is a cloud VM without a base image`,
            subject: record.name
          })
        const baseImage = { image: config.base }
        const baseSize = (yield* hypervisor.diskInfo(baseImage)).virtualSize
        yield* hypervisor.createDisk(vmDisk(record), String(Math.max(baseSize, diskSizeBytes(config.disk))), baseImage)
      }
      return { ...base, disk: diskFile(record), seedIso: yield* ensureSeed(record) }
    }
    return config.iso !== "" ? { ...base, cdrom: config.iso, bootFromCdrom: !config.installed } : base
  })

const SEED_FILE = "ovl/seed.iso"

/** The NoCloud seed, written once at first start; a clone gets its own (new instance-id) at its first start. */
const ensureSeed = (record: OkRecord) =>
  Effect.gen(function* () {
    const root = yield* DataRoot
    const seed = { vm: vmRef(record), file: SEED_FILE }
    const path = join(record.dir, SEED_FILE)
    if (yield* fs.isPresent(path)) return seed
    const guest = yield* Effect.flatMap(GuestDefinitions, (guests) => guests.get(record.config.os))
    const keys = yield* clientKeyPair(root)
    // Recipes the VM is created with run at first boot; later changes go over ssh.
    const firstBoot = yield* firstBootUserData(record)
    yield* writeSeedIso({
      path,
      vmName: record.name,
      // The account ssh then logs in as (one rule with sshTarget), or the seed would make one stoat never uses.
      user: sshUserOf(record.config),
      shell: guest.shell,
      authorizedKey: keys.publicKey,
      consolePassword: resolveConsolePassword(record.config.console_password),
      userDataExtra: firstBoot === undefined ? undefined : [firstBoot],
      seedDir: join(record.dir, "ovl", "seed")
    })
    return seed
  })
