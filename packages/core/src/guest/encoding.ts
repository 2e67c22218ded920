/** Bytes from a guest as JSON text: UTF-8 when they are valid UTF-8, else base64 (MCP and `--json` carry text only). */

const strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const lossy = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })

/** The text of valid UTF-8, else undefined. */
export const utf8Text = (bytes: Uint8Array): string | undefined => {
  try {
    return strict.decode(bytes)
  } catch {
    return undefined
  }
}

/** Text for lines and messages, where a stray invalid byte may become U+FFFD. */
export const lossyText = (bytes: Uint8Array): string => lossy.decode(bytes)

/** `{content}` for UTF-8, `{content: base64, encoding: "base64"}` otherwise (FileContent's shape). */
export const textOrBase64 = (bytes: Uint8Array): { content: string; encoding?: "base64" } => {
  const text = utf8Text(bytes)
  return text !== undefined ? { content: text } : { content: Buffer.from(bytes).toString("base64"), encoding: "base64" }
}

/** One exec stream: `{stdout}` for UTF-8, else `{stdout_base64, stdout_encoding: "base64"}` (ExecResult's shape). */
export const bytesField = <N extends "stdout" | "stderr">(name: N, bytes: Uint8Array) => {
  const text = utf8Text(bytes)
  return text !== undefined
    ? { [name]: text }
    : { [`${name}_base64`]: Buffer.from(bytes).toString("base64"), [`${name}_encoding`]: "base64" as const }
}

/** The bytes of an exec stream as ExecResult carries it (text or base64). */
export const streamBytes = (result: { readonly [key: string]: unknown }, name: "stdout" | "stderr"): Uint8Array => {
  const text = result[name]
  if (typeof text === "string") return Buffer.from(text, "utf8")
  const base64 = result[`${name}_base64`]
  return typeof base64 === "string" ? Buffer.from(base64, "base64") : new Uint8Array()
}
