import { Effect, Schema } from "effect"
import { ImageList, PullResult } from "@stoat/wire"
import { DataRoot } from "../platform/data-root.js"
import { Guests } from "../guest/definitions.js"
import { imagesOnHost, lookupImage, pull } from "../images/index.js"
import { ImageBuilder } from "../ports/image-builder.js"
import { VmStore } from "../vm/store.js"
import { defineOperation, READ } from "./operation.js"
import { NoInput } from "./inputs.js"
import { progressReporter, stageReporter } from "../context/progress.js"

export const listImages = defineOperation({
  key: "image.list",
  tool: "list_images",
  expose: { cli: "images", mcp: true },
  title: "List images",
  description: "List the catalog images (and images VMs were created from) with whether each is downloaded and its size. `tiny` is built locally from Debian packages.",
  kind: "query",
  input: NoInput,
  output: ImageList,
  annotations: READ,
  access: null,
  run: () =>
    Effect.gen(function* () {
      const root = yield* DataRoot
      const records = yield* (yield* VmStore).list
      const guests = yield* Effect.orElseSucceed((yield* Guests).list, () => [])
      const configs = records.flatMap((record) => (record.kind === "ok" ? [record.config] : []))
      return { images: yield* imagesOnHost(root.isos, configs, guests) }
    })
})

export const pullImage = defineOperation({
  key: "image.pull",
  tool: "pull",
  expose: { cli: "pull", mcp: false },
  title: "Download an image",
  description:
    "Download a catalog image into the data root, verifying its published checksum while streaming; `tiny` is assembled locally instead. Progress is reported as it goes; interrupting removes the partial file.",
  kind: "command",
  input: Schema.Struct({ id: Schema.String }),
  output: PullResult,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const root = yield* DataRoot
      yield* root.ensure
      const entry = yield* lookupImage(input.id)
      if (entry.local) {
        yield* (yield* ImageBuilder).build(entry.id, { onStage: yield* stageReporter })
        return { id: entry.id, downloaded: true, verified: true, checksum_available: false }
      }
      return yield* pull(entry, { isosDir: root.isos, onProgress: yield* progressReporter })
    })
})
