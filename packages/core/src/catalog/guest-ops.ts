import { Effect, Schema } from "effect"
import { ExecResult } from "@stoat/wire"
import { DataRoot } from "../data-root.js"
import { GuestTransport } from "../transport.js"
import { loadVm, requireRunning, sshTarget } from "../vm-runtime.js"
import { VmName } from "./inputs.js"
import { defineOperation, EXEC } from "./operation.js"

const MiB = 1024 * 1024
const EnvName = Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/))
const GuestPath = Schema.String.pipe(Schema.pattern(/^\/[^\0]*$/, { message: () => "guest paths are absolute and contain no NUL" }))

/** Text when the bytes are valid UTF-8, else base64 in `<stream>_base64`. */
const streamField = (name: "stdout" | "stderr", bytes: Uint8Array) => {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes)
  return Buffer.from(text, "utf8").equals(Buffer.from(bytes))
    ? { [name]: text }
    : { [`${name}_base64`]: Buffer.from(bytes).toString("base64"), [`${name}_encoding`]: "base64" as const }
}

export const execInGuest = defineOperation({
  key: "guest.exec",
  tool: "exec",
  cli: "exec",
  title: "Run a command in a VM",
  description:
    "Run argv (an argument array, not a shell string) in a running VM over SSH and return stdout, stderr and exit_code. Stops after timeout_seconds (default 60, max 600) and returns partial output with timed_out=true; use exec_bg for longer work. Output is capped at 1 MiB per stream.",
  kind: "command",
  input: Schema.Struct({
    vm: VmName,
    argv: Schema.NonEmptyArray(Schema.String),
    stdin: Schema.optional(Schema.String),
    cwd: Schema.optional(GuestPath),
    env: Schema.optional(Schema.Record({ key: EnvName, value: Schema.String })),
    timeout_seconds: Schema.optional(Schema.Int.pipe(Schema.between(1, 600)))
  }),
  output: ExecResult,
  annotations: EXEC,
  access: "exec",
  run: (input) =>
    Effect.gen(function* () {
      const record = yield* loadVm(input.vm)
      yield* requireRunning(record)
      const root = yield* DataRoot
      const transport = yield* GuestTransport
      const output = yield* transport.exec(sshTarget(root, record), input.argv, {
        timeoutMs: (input.timeout_seconds ?? 60) * 1000,
        maxOutputBytes: MiB,
        ...(input.stdin !== undefined ? { stdin: input.stdin } : {}),
        ...(input.cwd !== undefined ? { cwd: input.cwd } : {}),
        ...(input.env !== undefined ? { env: input.env } : {})
      })
      return {
        exit_code: output.exitCode,
        ...streamField("stdout", output.stdout),
        ...streamField("stderr", output.stderr),
        ...(output.timedOut ? { timed_out: true } : {})
      }
    })
})
