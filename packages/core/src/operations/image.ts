import { Effect, Schema } from "effect"
import { ImageList, PullResult } from "@stoat/wire"
import { Images } from "../images/service.js"
import { defineOperation, READ } from "./operation.js"
import { NoInput } from "./inputs.js"
import { progressReporter, stageReporter } from "../context/progress.js"

export const listImages = defineOperation({
  key: "image.list",
  tool: "list_images",
  expose: { cli: "images", mcp: true },
  title: "List images",
  description: "Catalog images and images in use, with whether each is downloaded and its size. tiny is built locally.",
  kind: "query",
  input: NoInput,
  output: ImageList,
  annotations: READ,
  access: null,
  run: () =>
    Effect.map(
      Effect.flatMap(Images, (images) => images.list),
      (images) => ({ images })
    )
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
  touches: ["network"],
  access: null,
  run: (input) =>
    Effect.gen(function* () {
      const report = { onStage: yield* stageReporter, onProgress: yield* progressReporter }
      return yield* (yield* Images).pull(input.id, report)
    })
})
