export * from "./hypervisor.js"
export * from "./probe.js"
export * from "./process.js"
export * from "./live.js"
