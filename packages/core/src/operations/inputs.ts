import { Schema } from "effect"
import { ENV_NAME } from "../ssh/quote.js"

/** A VM name as given by a caller; the create grammar is stricter (see names.ts). */
export const VmName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { message: () => "VM names use letters, digits, '.', '_' and '-'" }),
  Schema.maxLength(64)
).annotations({ description: "VM name" })

/**
 * No arguments: a closed empty object. A bare `Struct({})` accepts any object or array and
 * ignores unknown keys even with onExcessProperty "error", and renders as "object or array".
 */
export const NoInput = Schema.Struct({})
  .pipe(
    Schema.filter((input) => {
      if (Array.isArray(input)) return "must be an object"
      const [first] = Object.keys(input)
      return first === undefined || `${first}: unknown argument`
    })
  )
  .annotations({ jsonSchema: { type: "object", properties: {}, required: [], additionalProperties: false } })

/** An integer in min..max; out of range it reads "must be min..max, got N". */
export const IntRange = (min: number, max: number) =>
  Schema.Int.pipe(Schema.between(min, max, { message: (issue) => `must be ${min}..${max}, got ${JSON.stringify(issue.actual)}` }))

/**
 * The VM sizes create and update take. QEMU's q35 machine runs at most 255 vCPUs without x2APIC
 * on a kernel irqchip (KVM only), so more is refused here rather than failing at start.
 */
const MAX_CPUS = 255
export const Cpus = IntRange(1, MAX_CPUS)
export const RamMb = IntRange(256, 1_048_576)
export const SshPort = IntRange(1024, 65535)

/** An absolute guest path (reference §5 Guards): no NUL, no relative path a guest shell would resolve. */
export const GuestPath = Schema.String.pipe(
  Schema.pattern(/^\/[^\0]*$/, { message: () => "guest paths are absolute and contain no NUL" }),
  Schema.maxLength(4096)
).annotations({ description: "Absolute guest path" })

/** An environment variable name for a guest command (reference §5 Guards). */
export const EnvName = Schema.String.pipe(Schema.pattern(ENV_NAME, { message: () => "environment names are letters, digits and _, not starting with a digit" }))
