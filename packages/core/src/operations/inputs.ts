import { Schema } from "effect"
import { ENV_NAME } from "../ssh/quote.js"
import { IntRange } from "../vm/limits.js"
import { VM_NAME, VM_NAME_MAX } from "../platform/names.js"

/** A VM name as given by a caller; the create grammar is stricter (see names.ts). */
export const VmName = Schema.String.pipe(
  Schema.pattern(VM_NAME, { message: () => "VM names use letters, digits, '.', '_' and '-'" }),
  Schema.maxLength(VM_NAME_MAX)
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

export const SshPort = IntRange(1024, 65535)

/** An absolute guest path (reference §5 Guards): no NUL, no relative path a guest shell would resolve. */
export const GuestPath = Schema.String.pipe(
  Schema.pattern(/^\/[^\0]*$/, { message: () => "guest paths are absolute and contain no NUL" }),
  Schema.maxLength(4096)
).annotations({ description: "Absolute guest path" })

/** An environment variable name for a guest command (reference §5 Guards). */
export const EnvName = Schema.String.pipe(
  Schema.pattern(ENV_NAME, { message: () => "environment names are letters, digits and _, not starting with a digit" })
)
