import { Args, Flags } from "@oclif/core"
import { MAX_WRITE_BYTES, utf8Text, writeFileOp } from "@stoat/core"
import { StoatCommand } from "../../base.js"

/** Stdin's bytes, or undefined as soon as they pass `cap`: what follows is never read, let alone buffered. */
const readStdinUpTo = async (cap: number): Promise<Buffer | undefined> => {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length
    if (size > cap) return undefined
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks, size)
}

const overTheCap = (what: string) =>
  `${what} more than ${MAX_WRITE_BYTES} bytes (16 MiB), the cap of one file write; copy bigger files with stoat cp <file> <vm>:<path>`

export default class FileWrite extends StoatCommand {
  static override summary = "Write a file in a VM"
  static override description =
    "Write --content, or stdin (any bytes), to a file of a running VM as its ssh user, then set its mode (default 0644). --append appends, --parents creates missing folders, --as-root writes as root through the guest's sudo -n. At most 16 MiB per write (more is refused before it is read in); copy bigger files with stoat cp."
  static override args = {
    vm: Args.string({ description: "VM name", required: true }),
    path: Args.string({ description: "absolute path in the guest", required: true })
  }
  static override flags = {
    content: Flags.string({ description: "the text to write (default: read stdin)" }),
    mode: Flags.string({ description: "octal permission bits", default: "0644" }),
    append: Flags.boolean({ description: "append instead of replacing" }),
    parents: Flags.boolean({ description: "create missing parent folders" }),
    "as-root": Flags.boolean({ description: "write as root (through the guest's escalation)" })
  }
  static override examples = [
    "stoat file write dev /etc/motd --content 'hello'",
    "stoat file write dev /home/stoat/app/run.sh --parents --mode 0755 < run.sh",
    "date | stoat file write dev /tmp/log --append",
    "stoat file write dev /etc/hosts --as-root < hosts"
  ]

  async run(): Promise<void> {
    const { args, flags } = await this.parse(FileWrite)
    if (flags.content === undefined && process.stdin.isTTY)
      return this.failWith({
        code: "usage",
        message: "give the content with --content or on stdin: stoat file write <vm> <path> < file"
      })
    const bytes =
      flags.content === undefined ? await readStdinUpTo(MAX_WRITE_BYTES) : Buffer.from(flags.content, "utf8")
    if (bytes === undefined)
      return this.failWith({ code: "usage", message: overTheCap("stdin holds"), subject: args.path })
    if (bytes.length > MAX_WRITE_BYTES)
      return this.failWith({
        code: "usage",
        message: overTheCap(`--content is ${bytes.length} bytes,`),
        subject: args.path
      })
    const text = utf8Text(bytes)
    const result = await this.call(writeFileOp, {
      vm: args.vm,
      path: args.path,
      ...(text !== undefined ? { content: text } : { content: bytes.toString("base64"), encoding: "base64" }),
      mode: flags.mode,
      ...(flags.append ? { append: true } : {}),
      ...(flags.parents ? { parents: true } : {}),
      ...(flags["as-root"] ? { as_root: true } : {})
    })
    this.emit(result, () => this.line(`wrote ${result.bytes} bytes to ${args.vm}:${result.path} (mode ${result.mode})`))
  }
}
