import { Args, Flags } from "@oclif/core"
import { readFileOp } from "@stoat/core"
import { StoatCommand } from "../../base.js"

export default class FileRead extends StoatCommand {
  static override summary = "Print a file of a VM"
  static override description =
    "Read a file of a running VM as its ssh user and write its bytes to stdout. At most 1 MiB per call: --offset and --max-bytes pick a range, and a note on stderr says when more follows. With --json the content is text, or base64 (encoding: base64) when it is not UTF-8."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    path: Args.string({ description: "absolute path in the guest", required: true })
  }
  static override flags = {
    offset: Flags.integer({ description: "first byte to read (0-based)", min: 0 }),
    "max-bytes": Flags.integer({ description: "bytes to read at most (default and cap 1 MiB; 0 = the cap)", min: 0 })
  }
  static override examples = [
    "stoat file read dev /etc/os-release",
    "stoat file read dev /var/log/big.log --offset 1048576",
    "stoat file read --json dev /bin/true"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(FileRead)
    const result = await this.call(readFileOp, {
      vm: args.vm,
      path: args.path,
      ...(flags.offset !== undefined ? { offset: flags.offset } : {}),
      ...(flags["max-bytes"] !== undefined ? { max_bytes: flags["max-bytes"] } : {})
    })
    this.emit(result, () => {
      const bytes = Buffer.from(result.content, result.encoding === "base64" ? "base64" : "utf8")
      process.stdout.write(bytes)
      if (result.truncated) {
        const next = (flags.offset ?? 0) + bytes.length
        // A file whose stat size is 0 (/dev/zero, /proc) reports only what was read, one byte past
        // the range: its length is unknown, so only a size beyond that is one the file really has.
        const total =
          result.size > next + 1
            ? `${args.path} has ${result.size} bytes; printed ${bytes.length}`
            : `printed ${bytes.length} bytes of ${args.path}; more follows`
        process.stderr.write(`stoat: file: ${total}; read on with --offset ${next}\n`)
      }
    })
  }
}
