import { Context, type Effect } from "effect"
import type { CannotReach, CapabilityUnavailable, Internal, InvalidSpec, NotFound } from "../errors.js"

/** A guest assembled on this host instead of downloaded (the tiny guest, debian-12-mini). */
export interface LocalImage {
  readonly kernel: string
  readonly initrd: string
  readonly append: string
  /** A root disk image VMs boot an overlay of (debian-12-mini); absent when the initrd is the whole system (tiny). */
  readonly rootDisk?: string
}

export interface BuildOptions {
  /** Called with each build stage as it happens. */
  readonly onStage?: (line: string) => void
  /**
   * A VM's base disk: answer the build that disk came from, so the VM keeps the kernel its
   * modules match after a newer build; not_found when that build is gone.
   */
  readonly rootDisk?: string
}

/** The port that builds (or reuses) locally assembled images; QEMU's adapter implements it. */
export class ImageBuilder extends Context.Tag("stoat/ImageBuilder")<
  ImageBuilder,
  {
    readonly build: (
      id: string,
      options?: BuildOptions
    ) => Effect.Effect<LocalImage, Internal | NotFound | CapabilityUnavailable | CannotReach | InvalidSpec>
    /** The bytes of the finished build `build` would reuse, or undefined when there is none (what `images` reports). */
    readonly built: (id: string) => Effect.Effect<number | undefined>
  }
>() {}
