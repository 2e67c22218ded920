import { createHash, randomBytes } from "node:crypto"
import { existsSync } from "node:fs"
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Cause, Effect, Exit, Fiber, Option } from "effect"
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest"
import type { ProgressData } from "@stoat/wire"
import type { KnownImage, ChecksumFormat } from "../../src/images/known.js"
import { pull, type PullOptions } from "../../src/images/download.js"
import { serveBytes, serveText, startFixtureServer, type FixtureServer } from "./fixture-server.js"

const FAST = { connectMs: 500, headersMs: 200, stallMs: 200 }
const image = randomBytes(256 * 1024 + 123)
const sha256 = createHash("sha256").update(image).digest("hex")
const sha512 = createHash("sha512").update(image).digest("hex")

let server: FixtureServer
let isosDir: string

beforeAll(async () => {
  server = await startFixtureServer()
})
afterAll(async () => {
  await server.close()
})
beforeEach(async () => {
  isosDir = join(await mkdtemp(join(tmpdir(), "stoat-pull-")), "isos")
  server.requests.length = 0
})
afterEach(async () => {
  await rm(join(isosDir, ".."), { recursive: true, force: true })
})

const entry = (
  file: string,
  checksum?: { path: string; format?: ChecksumFormat },
  imagePath = `/img/${file}`
): KnownImage => ({
  id: "fixture",
  os: "ubuntu",
  variant: "test",
  backend: "cloudinit",
  source: {
    kind: "url",
    url: `${server.base}${imagePath}`,
    file,
    checksum: checksum ? { url: `${server.base}${checksum.path}`, format: checksum.format ?? "sha256sums" } : null
  },
  local: false,
  sshUser: "stoat",
  approxBytes: image.length,
  defaultDisk: "8G"
})

const run = (target: KnownImage, extra: Partial<PullOptions> = {}) =>
  Effect.runPromiseExit(pull(target, { isosDir, timeouts: FAST, ...extra }))

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) throw new Error(`expected a typed failure, got ${Cause.pretty(exit.cause)}`)
  return failure.value
}

const files = async () => (existsSync(isosDir) ? (await readdir(isosDir)).sort() : [])

describe("pull", () => {
  it("downloads, verifies against SHA256SUMS and renames into place", async () => {
    server.route("/img/good.img", serveBytes(image, { chunk: 16 * 1024 }))
    server.route("/img/SHA256SUMS", serveText(`${"0".repeat(64)} *other.img\n${sha256} *good.img\n`))
    const exit = await run(entry("good.img", { path: "/img/SHA256SUMS" }))
    expect(exit).toEqual(Exit.succeed({ id: "fixture", downloaded: true, verified: true, checksum_available: true }))
    expect(await files()).toEqual(["good.img"])
    expect((await readFile(join(isosDir, "good.img"))).equals(image)).toBe(true)
  })

  it("verifies sha512 digests (chosen by length) from a BSD-style clearsigned file", async () => {
    server.route("/img/fedora.qcow2", serveBytes(image))
    server.route(
      "/img/CHECKSUM",
      serveText(
        `-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n# fedora.qcow2: ${image.length} bytes\nSHA512 (fedora.qcow2) = ${sha512}\n-----BEGIN PGP SIGNATURE-----\n\niQIzBAEBCAAdFiEE\n-----END PGP SIGNATURE-----\n`
      )
    )
    const exit = await run(entry("fedora.qcow2", { path: "/img/CHECKSUM", format: "bsd" }))
    expect(exit).toEqual(Exit.succeed({ id: "fixture", downloaded: true, verified: true, checksum_available: true }))
  })

  it("accepts a .SHA256 sidecar", async () => {
    server.route("/img/arch.qcow2", serveBytes(image))
    server.route("/img/arch.qcow2.SHA256", serveText(`${sha256}  arch.qcow2\n`))
    const exit = await run(entry("arch.qcow2", { path: "/img/arch.qcow2.SHA256", format: "sidecar" }))
    expect(Exit.isSuccess(exit) && exit.value.verified).toBe(true)
  })

  it("follows redirects", async () => {
    server.route("/img/moved.img", (_req, res) => {
      res.writeHead(302, { location: "/mirror/moved.img" })
      res.end()
    })
    server.route("/mirror/moved.img", serveBytes(image))
    server.route("/img/SHA256SUMS", serveText(`${sha256}  moved.img\n`))
    const exit = await run(entry("moved.img", { path: "/img/SHA256SUMS" }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(server.requests).toContain("/mirror/moved.img")
  })

  it("reuses a file whose digest already matches, without requesting the image again", async () => {
    server.route("/img/good.img", serveBytes(image))
    server.route("/img/SHA256SUMS", serveText(`${sha256}  good.img\n`))
    expect(Exit.isSuccess(await run(entry("good.img", { path: "/img/SHA256SUMS" })))).toBe(true)
    server.requests.length = 0
    const exit = await run(entry("good.img", { path: "/img/SHA256SUMS" }))
    expect(exit).toEqual(Exit.succeed({ id: "fixture", downloaded: true, verified: true, checksum_available: true }))
    expect(server.requests).toEqual(["/img/SHA256SUMS"])
  })

  it("replaces an existing file whose digest does not match", async () => {
    server.route("/img/good.img", serveBytes(image))
    server.route("/img/SHA256SUMS", serveText(`${sha256}  good.img\n`))
    await mkdir(isosDir, { recursive: true })
    await writeFile(join(isosDir, "good.img"), "stale")
    const exit = await run(entry("good.img", { path: "/img/SHA256SUMS" }))
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(server.requests).toContain("/img/good.img")
    expect((await readFile(join(isosDir, "good.img"))).equals(image)).toBe(true)
  })

  it("fails with checksum_mismatch and leaves neither the file nor the part", async () => {
    server.route("/img/bad.img", serveBytes(image))
    server.route("/img/SHA256SUMS", serveText(`${"ab".repeat(32)}  bad.img\n`))
    const error = failureOf(await run(entry("bad.img", { path: "/img/SHA256SUMS" })))
    expect(error.code).toBe("checksum_mismatch")
    expect(error.subject).toBe("fixture")
    expect(await files()).toEqual([])
  })

  it("fails with download_stalled when no byte arrives for the stall timeout, removing the part", async () => {
    // Keep the connection open instead of closing it: that is a stall, not a truncation.
    server.route("/img/stall.img", (_req, res) => {
      res.writeHead(200, { "content-length": String(image.length) })
      res.write(image.subarray(0, 4096))
    })
    const started = Date.now()
    const error = failureOf(await run(entry("stall.img")))
    expect(error.code).toBe("download_stalled")
    expect(Date.now() - started).toBeLessThan(5000)
    expect(await files()).toEqual([])
  })

  it("fails with download_failed when the server closes before Content-Length bytes", async () => {
    // Declares the full length but sends 64 KiB, then closes the socket.
    server.route(
      "/img/short.img",
      serveBytes(image.subarray(0, 65536), { chunk: 8192, declaredLength: image.length, stopAfter: 65536 })
    )
    const error = failureOf(await run(entry("short.img")))
    expect(error.code).toBe("download_failed")
    expect(await files()).toEqual([])
  })

  it("fails with download_failed on an HTTP error status", async () => {
    const error = failureOf(await run(entry("missing.img")))
    expect(error.code).toBe("download_failed")
    expect(error.message).toContain("404")
    expect(await files()).toEqual([])
  })

  it("fails with download_failed when the checksum file lists no digest for the image", async () => {
    server.route("/img/good.img", serveBytes(image))
    server.route("/img/SHA256SUMS", serveText(`${sha256}  something-else.img\n`))
    const error = failureOf(await run(entry("good.img", { path: "/img/SHA256SUMS" })))
    expect(error.code).toBe("download_failed")
    expect(server.requests).not.toContain("/img/good.img")
  })

  it("fails with download_failed when response headers never come", async () => {
    server.route("/img/silent.img", () => undefined)
    const started = Date.now()
    const error = failureOf(await run(entry("silent.img")))
    expect(error.code).toBe("download_failed")
    expect(error.message).toMatch(/no response/)
    expect(Date.now() - started).toBeLessThan(5000)
  })

  it("downloads without a published checksum as unverified", async () => {
    server.route("/img/nosum.qcow2", serveBytes(image))
    const exit = await run(entry("nosum.qcow2"))
    expect(exit).toEqual(Exit.succeed({ id: "fixture", downloaded: true, verified: false, checksum_available: false }))
    expect(await files()).toEqual(["nosum.qcow2"])
  })

  it("reports progress monotonically, once per whole percent, ending at 100", async () => {
    // Paced small chunks; TCP may still coalesce some under load, so the count is only bounded.
    server.route("/img/good.img", serveBytes(image, { chunk: 1000, delayMs: 1 }))
    const events: ProgressData[] = []
    const exit = await run(entry("good.img"), { onProgress: (event) => events.push(event) })
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(events.length).toBeGreaterThanOrEqual(2)
    expect(events.length).toBeLessThanOrEqual(101)
    for (const [i, event] of events.entries()) {
      expect(event.id).toBe("fixture")
      expect(event.total).toBe(image.length)
      expect(Number.isInteger(event.percent)).toBe(true)
      expect(event.percent).toBe(Math.floor((event.done * 100) / event.total))
      if (i > 0) {
        expect(event.percent).toBeGreaterThan(events[i - 1]!.percent)
        expect(event.done).toBeGreaterThan(events[i - 1]!.done)
      }
    }
    expect(events.at(-1)).toEqual({ id: "fixture", done: image.length, total: image.length, percent: 100 })
  })

  it("emits no progress when the server sends no Content-Length", async () => {
    server.route("/img/chunked.img", (_req, res) => {
      res.writeHead(200)
      res.write(image.subarray(0, 1000))
      res.end(image.subarray(1000))
    })
    const events: ProgressData[] = []
    const exit = await run(entry("chunked.img"), { onProgress: (event) => events.push(event) })
    expect(Exit.isSuccess(exit)).toBe(true)
    expect(events).toEqual([])
    expect((await readFile(join(isosDir, "chunked.img"))).equals(image)).toBe(true)
  })

  it("interrupting the Effect aborts the request and removes the part file before it returns", async () => {
    server.route("/img/slow.img", serveBytes(image, { chunk: 2048, delayMs: 20 }))
    let firstProgress: () => void = () => undefined
    const progressed = new Promise<void>((resolve) => (firstProgress = resolve))
    const fiber = Effect.runFork(
      pull(entry("slow.img"), { isosDir, timeouts: FAST, onProgress: () => firstProgress() })
    )
    await progressed
    expect(await files()).toEqual(["slow.img.part"])
    const exit = await Effect.runPromise(Fiber.interrupt(fiber))
    expect(Exit.isInterrupted(exit)).toBe(true)
    expect(await files()).toEqual([])
  })

  it("aborting the signal cancels with code canceled and removes the part file", async () => {
    server.route("/img/slow.img", serveBytes(image, { chunk: 2048, delayMs: 20 }))
    const controller = new AbortController()
    const exit = await run(entry("slow.img"), { signal: controller.signal, onProgress: () => controller.abort() })
    expect(failureOf(exit).code).toBe("canceled")
    expect(await files()).toEqual([])
  })

  it("refuses to pull a locally built image", async () => {
    const tiny: KnownImage = { ...entry("unused"), id: "tiny", local: true, source: { kind: "local", dir: "tiny" } }
    expect(failureOf(await run(tiny)).code).toBe("invalid_spec")
  })
})
