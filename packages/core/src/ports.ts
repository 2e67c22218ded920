import { Context, type Effect } from "effect"
import type { Snapshot } from "@stoat/wire"
import type {
  AlreadyRunning,
  CannotReach,
  CapabilityUnavailable,
  InvalidSpec,
  Internal,
  MonitorRejected,
  MonitorUnreachable,
  NoDisk,
  NotFound,
  NotRunning,
  QemuMissing,
  QemuStartFailed,
  ScreenshotFailed,
  ShareInvalid,
  Timeout,
  DiskShrink
} from "./errors.js"

/** Which VM a hypervisor call is about: its name and its folder. */
export interface VmRef {
  readonly name: string
  readonly dir: string
}

export interface RunState {
  readonly running: boolean
  readonly pid?: number
  /** RFC3339; the pidfile's mtime. */
  readonly startedAt?: string
}

export interface AccelProbe {
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
  readonly disk?: string
  /** Direct kernel boot (the tiny guest). */
  readonly kernel?: { readonly path: string; readonly initrd: string; readonly append: string }
  readonly cdrom?: string
  readonly seedIso?: string
  readonly bootFromCdrom?: boolean
  readonly workShare: string
  readonly hostShare?: string
  readonly extraShares?: ReadonlyArray<{ readonly tag: string; readonly host: string }>
  readonly cpuModel?: string
  readonly display: "window" | "vnc"
  /** Identity baked into a direct-boot guest at start: who may log in, its host key, its name. */
  readonly guestIdentity?: { readonly authorizedKeys: string; readonly hostKeyPath: string; readonly hostname: string }
}

/** A guest the provider assembles locally instead of downloading (the tiny guest, debian-12-mini). */
export interface LocalImage {
  readonly kernel: string
  readonly initrd: string
  readonly append: string
  /** A root disk image VMs boot an overlay of (debian-12-mini); absent when the initrd is the whole system (tiny). */
  readonly rootDisk?: string
}

export interface DiskInfo {
  readonly virtualSize: number
  readonly actualSize: number
  readonly format: string
  readonly backingFile?: string
}

/**
 * The port a VM provider implements (QEMU today; a remote libvirt or a cloud could be another).
 * Core decides what to run; the provider only knows how.
 */
export class Hypervisor extends Context.Tag("stoat/Hypervisor")<
  Hypervisor,
  {
    readonly status: (vm: VmRef) => Effect.Effect<RunState>
    readonly start: (plan: BootPlan) => Effect.Effect<StartedVm, QemuMissing | QemuStartFailed | AlreadyRunning | ShareInvalid>
    /**
     * Waits until the guest's console says sshd listens, for guests that say so (true); false at
     * once for others, and when the VM stops or the time runs out. Readiness still probes SSH.
     */
    readonly awaitSshd: (vm: VmRef, timeoutMs: number) => Effect.Effect<boolean>
    /** Graceful power-down, then SIGTERM, then SIGKILL; returns once the process is gone. */
    readonly stop: (vm: VmRef, options?: { readonly graceMs?: number }) => Effect.Effect<void, NotRunning>
    /** The accelerator VMs start under and why (the setting, a cached verdict, or a new probe). */
    readonly probeAccelerator: Effect.Effect<AccelProbe, QemuMissing | InvalidSpec>
    readonly createDisk: (path: string, size: string, backing?: string) => Effect.Effect<void, Internal | QemuMissing>
    readonly resizeDisk: (path: string, size: string) => Effect.Effect<void, Internal | DiskShrink | QemuMissing>
    readonly diskInfo: (path: string) => Effect.Effect<DiskInfo, Internal | NotFound | QemuMissing>
    readonly listSnapshots: (vm: VmRef, disk: string) => Effect.Effect<ReadonlyArray<Snapshot>, Internal | NoDisk | MonitorUnreachable>
    readonly saveSnapshot: (vm: VmRef, disk: string, tag: string) => Effect.Effect<void, Internal | NoDisk | MonitorUnreachable | MonitorRejected>
    readonly restoreSnapshot: (vm: VmRef, disk: string, tag: string) => Effect.Effect<void, Internal | NoDisk | NotFound | AlreadyRunning>
    readonly deleteSnapshot: (vm: VmRef, disk: string, tag: string) => Effect.Effect<void, Internal | NoDisk | NotFound | MonitorUnreachable | MonitorRejected>
    readonly screenshot: (vm: VmRef, out: string) => Effect.Effect<{ readonly width: number; readonly height: number; readonly bytes: number }, ScreenshotFailed | NotRunning>
    readonly validate: (plan: BootPlan) => Effect.Effect<void, InvalidSpec | Timeout>
    /**
     * Builds (or reuses) a locally assembled image such as `tiny`; stages are reported as they
     * happen. With `rootDisk` (a VM's base), the build that disk came from, so the VM keeps the
     * kernel its modules match after a newer build; not_found when that build is gone.
     */
    readonly localImage: (
      id: string,
      onStage?: (line: string) => void,
      options?: { readonly rootDisk?: string }
    ) => Effect.Effect<LocalImage, Internal | NotFound | CapabilityUnavailable | CannotReach | InvalidSpec>
  }
>() {}
