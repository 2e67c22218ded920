import { Schema } from "effect"
import { Json } from "./primitives.js"

const StringList = Schema.Array(Schema.String)
const StringMap = Schema.Record({ key: Schema.String, value: Schema.String })

/** A loaded guest OS definition (bundled, user file, or a user file merged over a bundled one). */
export const Guest = Schema.Struct({
  name: Schema.String,
  init: Schema.String,
  shell: Schema.String,
  installer: Schema.String,
  default_backend: Schema.String,
  default_ssh_user: Schema.String,
  escalate: StringList,
  capabilities: StringList,
  aliases: StringList,
  filename_hints: StringList,
  seed_packages: StringList,
  pkg: Schema.Struct({
    setup: Schema.String,
    install: StringList,
    env: StringMap,
    runtime_packages: StringMap
  }),
  svc: Schema.Struct({
    enable: Schema.String,
    start: Schema.String,
    stop: Schema.String,
    restart: Schema.String,
    status: Schema.String
  }),
  cmd: StringMap,
  backend: Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Json }) }),
  source: Schema.Literal("bundled", "user", "bundled+user")
})
export type Guest = typeof Guest.Type
export const GuestList = Schema.Struct({ guests: Schema.Array(Guest) })
export const GuestShow = Schema.Struct({ guest: Guest })
