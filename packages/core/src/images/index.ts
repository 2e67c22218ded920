// Known images, checksum parsing, pulls and listing. Light at load time: node:http/https are
// imported only when a pull starts.
export * from "./known.js"
export * from "./checksum.js"
export { pull, DEFAULT_TIMEOUTS, type DownloadTimeouts, type PullError, type PullOptions } from "./download.js"
export * from "./list.js"
