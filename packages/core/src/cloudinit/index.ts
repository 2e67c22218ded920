// NoCloud seeds: a pure-TypeScript ISO 9660 + Joliet writer and the cloud-init user/meta-data.
export * from "./iso.js"
export * from "./seed.js"
