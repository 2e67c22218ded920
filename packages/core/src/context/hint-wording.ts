import { Context } from "effect"
import { catalogWords, type HintWords } from "../errors.js"

/**
 * How the calling frontend words a failure's hint, for work that turns failures into messages
 * itself (a project's per-VM results): the CLI names its commands, the MCP server its tools.
 * By default the catalog's own terms.
 */
export class HintWording extends Context.Reference<HintWording>()("stoat/HintWording", {
  defaultValue: (): { readonly words: HintWords } => ({ words: catalogWords })
}) {}
