import { Effect, type Context } from "effect"
import type { ImageBuilder } from "../ports/image-builder.js"

/** What the fake image builder was asked for. Inspect it in tests. */
export class FakeImageBuilderState {
  /** Every build: which image, and the root disk it was pinned to (a VM's base). */
  readonly builds: Array<{ readonly id: string; readonly rootDisk?: string }> = []
  /** Bytes of each image built so far (a build leaves one on disk). */
  readonly sizes = new Map<string, number>()
}

/** Builds nothing: answers made-up paths at once, like the QEMU builder's shapes (debian-12-mini has a root disk; tiny is all initrd). */
export const makeFakeImageBuilder = (state: FakeImageBuilderState): Context.Tag.Service<ImageBuilder> => ({
  build: (id, options) =>
    Effect.sync(() => {
      state.builds.push({ id, ...(options?.rootDisk !== undefined ? { rootDisk: options.rootDisk } : {}) })
      state.sizes.set(id, 1024 * 1024)
      return {
        kernel: `/fake/${id}/vmlinux`,
        initrd: `/fake/${id}/initrd.img`,
        append: "console=ttyS0",
        ...(id === "debian-12-mini" ? { rootDisk: `/fake/${id}/rootfs.qcow2` } : {})
      }
    }),
  built: (id) => Effect.sync(() => state.sizes.get(id))
})
