import { createReadStream, existsSync, realpathSync, statSync } from "node:fs"
import { createServer } from "node:http"
import { basename, dirname, extname, join, resolve, sep } from "node:path"
import { ToolkitCommand } from "../../runtime/base.js"
import { Opt } from "../../runtime/options.js"
import { waitForStop } from "../../runtime/stop.js"

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".xml": "application/xml; charset=utf-8"
}
const contentType = (path: string): string => TYPES[extname(path).toLowerCase()] ?? "text/plain; charset=utf-8"

export default class ServeHtml extends ToolkitCommand {
  static override toolKind = "network" as const
  static override summary = "Serve an HTML file on localhost"
  static override description =
    "Serves the file at http://localhost:<port>/ and the files next to it by their names, until stopped with Ctrl+C. Only this machine can connect."
  static override flags = {
    file: Opt.string({ description: "Path of the HTML file to serve at /", required: true }),
    port: Opt.integer({ description: "Port to listen on", default: 8080, min: 0, max: 65_535 })
  }

  async run(): Promise<void> {
    const { flags } = await this.options(ServeHtml)
    if (!existsSync(flags.file) || !statSync(flags.file).isFile()) this.fail(`HTML file not found: ${flags.file}`)
    const file = realpathSync(flags.file)
    const root = dirname(file)
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://localhost")
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { allow: "GET, HEAD" }).end()
        return
      }
      let target = file
      if (url.pathname !== "/") {
        let relative: string
        try {
          relative = decodeURIComponent(url.pathname)
        } catch {
          res.writeHead(400).end()
          return
        }
        const candidate = resolve(root, `.${relative}`)
        // Only files inside the served file's directory, after symlinks are resolved.
        const real = existsSync(candidate) ? realpathSync(candidate) : ""
        if (real === "" || !(real === root || real.startsWith(root + sep)) || !statSync(real).isFile()) {
          res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("Not found\n")
          return
        }
        target = real
      }
      res.writeHead(200, { "content-type": contentType(target), "content-length": statSync(target).size })
      if (req.method === "HEAD") res.end()
      else createReadStream(target).pipe(res)
    })
    await new Promise<void>((ok, ko) => {
      server.once("error", ko)
      server.listen(flags.port, "127.0.0.1", () => ok())
    }).catch((error: NodeJS.ErrnoException) =>
      this.fail(
        `cannot listen on port ${flags.port}: ${error.code === "EADDRINUSE" ? "address already in use" : error.message}`
      )
    )
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : flags.port
    this.line(
      `Serving ${basename(file)} at http://localhost:${port}/ (files from ${join(root, "")}); press Ctrl+C to stop`
    )
    await waitForStop()
    await new Promise<void>((ok) => server.close(() => ok()))
    server.closeAllConnections()
  }
}
