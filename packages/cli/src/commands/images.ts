import { listImages } from "@stoat/core"
import { StoatCommand } from "../base.js"
import { table } from "../render.js"

const size = (bytes: number, exact: boolean): string => {
  const text = bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)}G` : `${Math.round(bytes / 1024 ** 2)}M`
  return exact ? text : `~${text}`
}

export default class Images extends StoatCommand {
  static override summary = "List images"
  static override description = "List catalog images and whether each is downloaded (or, for tiny, built)."

  async run(): Promise<void> {
    await this.parse(Images)
    const { images } = await this.call(listImages, {})
    this.emit({ images }, () =>
      this.line(
        table(
          ["ID", "OS", "VARIANT", "SIZE", "STATE"],
          images.map((image) => [
            image.id || image.file,
            image.os,
            image.variant,
            size(image.bytes, image.bytes_exact),
            image.byo ? "byo" : image.downloaded ? "downloaded" : "-"
          ])
        )
      )
    )
  }
}
