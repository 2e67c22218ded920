export * from "./encoding.js"
export * from "./ops.js"
export * from "./session.js"
export * as GuestScripts from "./scripts.js"
