export { createServer, makeStoatMcp, type StoatMcp, type StoatMcpOptions } from "./server.js"
export { liveRuntime } from "./live.js"
export { serveStdio } from "./transports/stdio.js"
export { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimits, type RateVerdict } from "./policy/rate-limit.js"
export { redact, SECRET_KEYS } from "./policy/redact.js"
export {
  buildRegistry,
  definitionOf,
  inputSchemaOf,
  outputSchemaOf,
  toolsetOf,
  TOOLSETS,
  type RegistryOptions,
  type Toolset,
  type ToolDefinition,
  type ToolEntry
} from "./tools/registry.js"
export { callTool, type CallChannel, type CallDependencies } from "./tools/call.js"
export { ERROR_META_KEY } from "@stoat/wire"
export { errorResult, successResult, type ToolResult } from "./tools/result.js"
export { CATALOG_URI, guide, GUIDE_URI, VM_TEMPLATE, catalogDocument } from "./resources/index.js"
export { PROMPTS } from "./prompts/index.js"
export { serve, ServeRefused, type ServeOptions } from "./serve.js"
