import { Schema } from "effect"

/** A VM name as given by a caller; the create grammar is stricter (see names.ts). */
export const VmName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { message: () => "VM names use letters, digits, '.', '_' and '-'" }),
  Schema.maxLength(64)
).annotations({ description: "VM name" })

export const NoInput = Schema.Struct({})
