import { randomBytes } from "node:crypto"
import { open, rename, unlink, mkdir } from "node:fs/promises"
import { dirname, basename, join } from "node:path"

/**
 * Replaces `path` with `data` so readers see the old or the new content, never a torn file:
 * write a temp file beside it, fsync, rename over, fsync the folder.
 */
export const writeFileAtomic = async (path: string, data: string | Uint8Array, mode = 0o644): Promise<void> => {
  const dir = dirname(path)
  await mkdir(dir, { recursive: true })
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`)
  const handle = await open(temp, "wx", mode)
  try {
    await handle.writeFile(data)
    await handle.chmod(mode)
    await handle.sync()
  } catch (error) {
    await handle.close()
    await unlink(temp).catch(() => undefined)
    throw error
  }
  await handle.close()
  try {
    await rename(temp, path)
  } catch (error) {
    await unlink(temp).catch(() => undefined)
    throw error
  }
  const folder = await open(dir, "r")
  try {
    await folder.sync()
  } finally {
    await folder.close()
  }
}

export const isNotFound = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (error as { code?: unknown }).code === "ENOENT"
