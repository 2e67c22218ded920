import { Schema } from "effect"

/** Wire numbers are finite integers (ports, sizes, counts, milliseconds). */
export const Int = Schema.Int
/** Any JSON value: what `data` and opaque tables may hold. */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
export const Json: Schema.Schema<Json> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Int,
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) })
  // Recursive: JSON Schema names it once under $defs and refers to it.
).annotations({ identifier: "Json" })
