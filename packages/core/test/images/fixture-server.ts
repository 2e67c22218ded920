import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { Socket } from "node:net"

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

export interface FixtureServer {
  readonly base: string
  /** Paths requested, in order. */
  readonly requests: string[]
  readonly route: (path: string, handler: Handler) => void
  readonly close: () => Promise<void>
}

/** A loopback HTTP server whose routes tests set per case; sockets are destroyed on close so stalled handlers never hang the suite. */
export const startFixtureServer = async (): Promise<FixtureServer> => {
  const routes = new Map<string, Handler>()
  const requests: string[] = []
  const sockets = new Set<Socket>()
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname
    requests.push(path)
    const handler = routes.get(path)
    if (handler) handler(req, res)
    else {
      res.statusCode = 404
      res.end("not found")
    }
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address()
  if (address === null || typeof address === "string") throw new Error("no address")
  return {
    base: `http://127.0.0.1:${address.port}`,
    requests,
    route: (path, handler) => void routes.set(path, handler),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}

/** Serves `body` with a Content-Length, in chunks of `chunk` bytes spaced `delayMs` apart. */
export const serveBytes =
  (
    body: Buffer,
    options: { chunk?: number; delayMs?: number; stopAfter?: number; declaredLength?: number } = {}
  ): Handler =>
  (_req, res) => {
    res.writeHead(200, {
      "content-type": "application/octet-stream",
      "content-length": String(options.declaredLength ?? body.length)
    })
    const chunk = options.chunk ?? body.length
    const limit = options.stopAfter ?? body.length
    let offset = 0
    const pump = () => {
      if (res.destroyed) return
      if (offset >= limit) {
        // Stopping short of the declared length means a truncated transfer: close the socket.
        if (limit < (options.declaredLength ?? body.length)) res.socket?.destroy()
        else res.end()
        return
      }
      const end = Math.min(offset + chunk, limit)
      res.write(body.subarray(offset, end))
      offset = end
      if (options.delayMs) setTimeout(pump, options.delayMs)
      else setImmediate(pump)
    }
    pump()
  }

export const serveText =
  (text: string, status = 200): Handler =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "text/plain" })
    res.end(text)
  }
