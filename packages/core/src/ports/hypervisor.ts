import { Context, type Effect, type Redacted } from "effect"
import type { HostCheck, Snapshot } from "@stoat/wire"
import type {
  AlreadyRunning,
  CannotReach,
  CapabilityUnavailable,
  InvalidSpec,
  Internal,
  AcceleratorUnusable,
  LimitReached,
  ControlRejected,
  ControlUnreachable,
  NoDisk,
  NotFound,
  NotRunning,
  ProviderMissing,
  ProviderStartFailed,
  ScreenshotFailed,
  ShareInvalid,
  DiskShrink
} from "../errors.js"

/** Which VM a hypervisor call is about: its name and its folder. */
export interface VmRef {
  readonly name: string
  readonly dir: string
}

/** A disk file of a VM, named relative to the VM's folder (`disk.qcow2`, `layers/<id>.qcow2`). */
export interface VmDisk {
  readonly vm: VmRef
  readonly file: string
}

/** A base image a disk can be an overlay of: one the image store holds, or one the user named. */
export interface BaseImage {
  readonly image: string
}

/** Any disk the provider can describe or build on: a VM's own, or a base image. */
export type DiskRef = VmDisk | BaseImage

export const isBaseImage = (disk: DiskRef): disk is BaseImage => "image" in disk

export interface RunState {
  readonly running: boolean
  readonly pid?: number
  /** RFC3339; the pidfile's mtime. */
  readonly startedAt?: string
  /** Running, but its pidfile does not name it (deleted or overwritten): found by what it runs. */
  readonly orphaned?: boolean
  /**
   * Not running, and the files of its last run are still there: it ended without a shutdown
   * (killed, crashed, or the host went down). Host paths, for prune; empty or absent after a clean stop.
   */
  readonly leftovers?: ReadonlyArray<string>
  /**
   * Not known: the provider could not ask (its host or daemon did not answer). Why, naming the
   * host and what to do; `running` is then false only for want of an answer, and the VM is shown
   * broken, never stopped.
   */
  readonly unreachable?: CannotReach
}

/**
 * How the provider's VMs run on this host: `kvm` with hardware virtualisation, `tcg` emulated in
 * software (the words are the wire's; another provider maps its own onto them). `detail` says why.
 */
export interface Acceleration {
  readonly accel: "kvm" | "tcg"
  readonly detail: string
}

/** A VM the provider started: its run state, the accelerator it runs under, and anything a person should be told. */
export interface StartedVm extends RunState {
  readonly accel: "kvm" | "tcg"
  /** For example that KVM could not run the guest and it was restarted under TCG. */
  readonly notice?: string
}

/** Everything a provider needs to boot a VM; built by core from vm.toml, the image and the data root. */
export interface BootPlan {
  readonly vm: VmRef
  readonly ramMb: number
  readonly cpus: number
  readonly sshPort: number
  readonly forwards: ReadonlyArray<{ readonly host: number; readonly guest: number }>
  /** The VM's disk, relative to its folder. */
  readonly disk?: string
  /** Direct kernel boot (the tiny guest): files the ImageBuilder port built. */
  readonly kernel?: { readonly path: string; readonly initrd: string; readonly append: string }
  /** An installer ISO the user named (a host path of theirs, like the shares). */
  readonly cdrom?: string
  /**
   * The NoCloud seed, a file of a VM's folder: the VM's own at a boot; a VM resumed from a
   * checkpoint keeps the one its source booted with (the saved devices must stay the same).
   */
  readonly seedIso?: VmDisk
  readonly bootFromCdrom?: boolean
  /** Host folders shared into the guest: the VM's work folder and the user's own. */
  readonly workShare: string
  readonly hostShare?: string
  readonly extraShares?: ReadonlyArray<{ readonly tag: string; readonly host: string }>
  readonly cpuModel?: string
  readonly display: "window" | "vnc"
  /**
   * Identity baked into a direct-boot guest at start: who may log in, its sshd host key (OpenSSH
   * private key text, redacted so a plan written to a file or a log never carries it), its name.
   */
  readonly guestIdentity?: {
    readonly authorizedKeys: string
    readonly hostKey: Redacted.Redacted<string>
    readonly hostname: string
  }
}

/**
 * Where a checkpoint of a running VM goes, every name relative to the VM folder. `disk`, the file
 * the VM writes to now, is frozen from then on (forks are built on it, and the running QEMU keeps
 * reading it by that name, so it is never moved); the VM goes on writing to a new overlay at
 * `top`, whose backing file is `disk`.
 */
export interface CheckpointRequest {
  readonly disk: string
  readonly top: string
  /**
   * Written, the moment the VM writes to `top`, with `top` itself: a crash right after still
   * leaves the VM's disk found (see diskPath).
   */
  readonly topPointer: string
  /** A folder the provider fills with the RAM and device state and whatever it needs to resume it. */
  readonly folder: string
}

/** What the provider saved. */
export interface CheckpointTaken {
  /** How long the guest was paused (the disk switch and the state written). */
  readonly pausedMs: number
  /** The file holding the RAM and device state, relative to the VM folder (a change to it makes the checkpoint unusable). */
  readonly stateFile: string
  readonly stateBytes: number
  readonly ramMb: number
  readonly cpus: number
}

/** What differs between a checkpoint's source and a VM resumed from it; every device stays the same. */
export interface ResumePlan {
  readonly vm: VmRef
  readonly sshPort: number
  /** The new VM's disk, relative to its folder (as in BootPlan): an overlay on the checkpoint's layer. */
  readonly disk: string
  readonly workShare: string
}

export interface DiskInfo {
  readonly virtualSize: number
  readonly actualSize: number
  readonly format: string
  /** The disk this one is an overlay of, named as every disk is: a VM's own, or a base image. */
  readonly backing?: DiskRef
}

/** A PNG of a VM's display. */
export interface Screenshot {
  readonly png: Uint8Array
  readonly width: number
  readonly height: number
}

/**
 * The port a VM provider implements (QEMU today; libvirt or a cloud could be another). Core
 * decides what to run; the provider only knows how.
 *
 * The contract, checked for every provider by `hypervisorContract` (core's `testing` entry):
 * - A VM is a `VmRef`: a name and a folder core owns. The provider may keep its own files in that
 *   folder (QEMU: pidfile, sockets, `console.log`, `boot.json`) and nowhere else of core's.
 * - Expected failures are core's tagged errors, the same for every provider: the provider's own
 *   names go in the message (`ProviderMissing`: "qemu-system-x86_64 not found"), never in a tag.
 *   `AlreadyRunning` for a start of a running VM, `NotRunning` for a stop, screenshot or
 *   checkpoint of a stopped one, `NoDisk` for snapshot calls on a disk that does not exist,
 *   `DiskShrink` for a resize below the current size, `NotFound` for `diskInfo` of a missing disk.
 * - `status` is cheap and never fails: a listing asks it of every VM.
 * - `start` returns once the VM runs (its guest may still be booting: readiness is `GuestSignals`
 *   plus the guest transport); `stop` returns once it is gone.
 * - Disks are named relative to the VM folder or as base images (`DiskRef`), never as host paths
 *   of the provider's choosing; snapshots are the disk's own (they travel with it).
 */
export class Hypervisor extends Context.Tag("stoat/Hypervisor")<
  Hypervisor,
  {
    /**
     * Whether the VM runs, from state the provider keeps at hand (QEMU: a pidfile and /proc):
     * every listing asks it of each VM in turn, so a remote provider answers from its own cache.
     */
    readonly status: (vm: VmRef) => Effect.Effect<RunState>
    /**
     * Checks the plan first (invalid_spec for one the provider cannot run), then boots it; limit_reached when the VM's files do not fit on the disk.
     * A provider on another host: cannot_reach when the host or its daemon does not answer, kvm_unusable when KVM is demanded and the host has none.
     */
    readonly start: (
      plan: BootPlan
    ) => Effect.Effect<
      StartedVm,
      | ProviderMissing
      | ProviderStartFailed
      | AlreadyRunning
      | ShareInvalid
      | InvalidSpec
      | LimitReached
      | CannotReach
      | AcceleratorUnusable
    >
    /** Graceful power-down, then SIGTERM, then SIGKILL; returns once the process is gone. */
    readonly stop: (vm: VmRef, options?: { readonly graceMs?: number }) => Effect.Effect<void, NotRunning | CannotReach>
    /**
     * How VMs start on this host and why (a capability query: QEMU answers from STOAT_ACCEL, a
     * cached verdict, or a new probe of KVM). invalid_spec for a setting it cannot read.
     */
    readonly acceleration: Effect.Effect<Acceleration, ProviderMissing | InvalidSpec>
    /** Makes `disk`, of `size` (empty: the backing's size) and optionally an overlay of `backing`. */
    /** A full file system is limit_reached (as for any write). */
    readonly createDisk: (
      disk: VmDisk,
      size: string,
      backing?: DiskRef
    ) => Effect.Effect<void, Internal | ProviderMissing | LimitReached>
    readonly resizeDisk: (
      disk: VmDisk,
      size: string
    ) => Effect.Effect<void, Internal | DiskShrink | ProviderMissing | LimitReached>
    readonly diskInfo: (disk: DiskRef) => Effect.Effect<DiskInfo, Internal | NotFound | ProviderMissing>
    /*
     * Snapshot mechanisms only (the rules, such as replacing a tag or restoring only a stopped VM,
     * are the Snapshots service's). no_disk when the disk does not exist.
     */
    readonly listSnapshots: (
      disk: VmDisk
    ) => Effect.Effect<ReadonlyArray<Snapshot>, Internal | NoDisk | ControlUnreachable>
    /** Adds a snapshot named `tag`, on a running VM disk-only. */
    readonly saveSnapshot: (
      disk: VmDisk,
      tag: string
    ) => Effect.Effect<void, Internal | NoDisk | ControlUnreachable | ControlRejected>
    /** Rolls a stopped VM's disk back to the snapshot named `tag`. */
    readonly restoreSnapshot: (disk: VmDisk, tag: string) => Effect.Effect<void, Internal | NoDisk>
    /** Deletes every snapshot named `tag` (none: nothing to do). */
    readonly deleteSnapshot: (
      disk: VmDisk,
      tag: string
    ) => Effect.Effect<void, Internal | NoDisk | ControlUnreachable | ControlRejected>
    /**
     * Makes the new file `disk` an overlay of `backing` that reads as snapshot `tag` of `source`,
     * a disk below `backing` in its chain. No existing file changes. None of them may be written by a running VM.
     */
    readonly snapshotOverlay: (
      source: VmDisk,
      tag: string,
      disk: VmDisk,
      backing: VmDisk
    ) => Effect.Effect<void, Internal | NoDisk>
    readonly screenshot: (vm: VmRef) => Effect.Effect<Screenshot, ScreenshotFailed | NotRunning>
    /**
     * Pauses a running VM as briefly as it can, switches it from `request.disk` onto a fresh
     * overlay at `request.top`, saves RAM and device state into `request.folder`, and lets it run on. The
     * guest must have no 9p share mounted (QEMU refuses to migrate one): capability_unavailable.
     */
    readonly checkpoint: (
      vm: VmRef,
      request: CheckpointRequest
    ) => Effect.Effect<
      CheckpointTaken,
      NotRunning | CapabilityUnavailable | ControlUnreachable | ControlRejected | Internal | ProviderMissing
    >
    /**
     * Starts a new VM running from a checkpoint (`folder`, relative to the checkpointed VM's
     * folder), warm: same devices, its own disk, port and share.
     */
    readonly resume: (
      checkpoint: { readonly vm: VmRef; readonly folder: string },
      plan: ResumePlan
    ) => Effect.Effect<StartedVm, ProviderMissing | ProviderStartFailed | AlreadyRunning | ShareInvalid | LimitReached>
    /**
     * Copies into a disk what it reads through its backing chain above `backing`, then makes
     * `backing` its backing file (none: it stands alone). The disk must not be in use.
     */
    readonly rebaseDisk: (disk: VmDisk, backing: DiskRef | undefined) => Effect.Effect<void, Internal | ProviderMissing>
  }
>() {}

/**
 * The checks of one host a provider runs VMs on (`stoat doctor --host URI`), in doctor's terms:
 * only providers that place VMs on other hosts provide it, so a stack without one has no such
 * service (core asks for it as an option). Never fails: what went wrong is a failed check.
 */
export class HostChecks extends Context.Tag("stoat/HostChecks")<
  HostChecks,
  { readonly check: (host: string) => Effect.Effect<ReadonlyArray<HostCheck>> }
>() {}

/**
 * What a booting guest signals before its network service answers. Kept off `Hypervisor`: the
 * signal is the guest's (a console line only guests Stoat assembles print), and a provider
 * without a serial console implements it as "no signal" (false at once).
 */
export class GuestSignals extends Context.Tag("stoat/GuestSignals")<
  GuestSignals,
  {
    /**
     * Waits until the guest of the VM's current boot says sshd listens, for guests that say so
     * (true); false at once for others, and when the VM stops or the time runs out. Readiness
     * still probes SSH after it: this only spares connections made before the guest has network.
     */
    readonly awaitSshd: (vm: VmRef, timeoutMs: number) => Effect.Effect<boolean>
  }
>() {}
