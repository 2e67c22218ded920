export * from "./file.js"
export * from "./service.js"
export * from "./drift.js"
export * from "./fan-out.js"
