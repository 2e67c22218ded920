export { Caller, CliCaller, cliCaller, McpCaller, ToolkitCaller } from "./caller.js"
export { AccessPolicy, callerLayer } from "./access-policy.js"
export { Progress, progressLine, progressReporter, stageReporter, type ProgressEvent } from "./progress.js"
