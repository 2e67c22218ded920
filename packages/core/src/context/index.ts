export { Caller, CliCaller, cliCaller, McpCaller, ToolkitCaller } from "./caller.js"
export { AccessPolicy, callerLayer } from "./access-policy.js"
