import type { ProgressEvent } from "./progress.js"

/**
 * One call's request as a frontend hands it to `runOperation`: its id (audit lines) and where its
 * progress goes. Who asked is the `Caller` service, not part of it; handlers report through `Progress`.
 */
export interface ExecutionContext {
  readonly requestId: string
  readonly progress?: (event: ProgressEvent) => void
}
