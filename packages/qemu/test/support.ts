import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { mkdir } from "node:fs/promises"
import { connect, createServer } from "node:net"
import { homedir } from "node:os"
import { join } from "node:path"
import { type Context, Effect, Either, Layer, Redacted } from "effect"
import {
  awaitSsh,
  dataRootAt,
  guestHostname,
  GuestSignals,
  Hypervisor,
  ImageBuilder,
  type BootPlan,
  type VmRef
} from "@stoat/core"
import { GuestTransportLive } from "@stoat/core/ssh"
import { makeQemuHypervisor, QemuGuestSignalsLive } from "../src/hypervisor.js"
import { makeQemuImageBuilder } from "../src/image-builder.js"
import type { TinyGuestImage } from "../src/tiny/build.js"

/** These tests drive real QEMU: a missing binary is a failure, never a skip. */
export const requireQemu = (): void => {
  for (const tool of ["qemu-system-x86_64", "qemu-img"]) {
    try {
      execFileSync(tool, ["--version"], { stdio: "ignore" })
    } catch {
      throw new Error(`${tool} is required by the @stoat/qemu tests (apt-get install qemu-system-x86 qemu-utils)`)
    }
  }
}

/** Shared between runs so only the first one downloads and builds the tiny guest. */
export const tinyCacheDir = join(process.env["STOAT_TEST_CACHE"] ?? join(homedir(), ".cache", "stoat-test"), "tiny")

/** The QEMU hypervisor over a data root at `root`. */
export const hypervisorAt = (root: string) => makeQemuHypervisor({ tinyCacheDir }).pipe(Layer.provide(dataRootAt(root)))

/** Runs one Hypervisor call; the typed failure comes back as Left so tests can look at its code. */
export const call = <A, E>(root: string, use: (hypervisor: Context.Tag.Service<Hypervisor>) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.either(Effect.flatMap(Hypervisor, use)).pipe(Effect.provide(hypervisorAt(root))))

/** The QEMU provider's GuestSignals: whether the VM's current boot said sshd listens. */
export const awaitSshd = (vm: VmRef, timeoutMs: number): Promise<boolean> =>
  Effect.runPromise(
    Effect.flatMap(GuestSignals, (signals) => signals.awaitSshd(vm, timeoutMs)).pipe(
      Effect.provide(QemuGuestSignalsLive)
    )
  )

/** The first line sshd sends on 127.0.0.1:port (its SSH identification), or what was there instead. */
export const sshBanner = (port: number): Promise<string> =>
  new Promise((resolve, reject) => {
    let data = ""
    const socket = connect({ host: "127.0.0.1", port })
    socket.setTimeout(30_000, () => socket.destroy(new Error(`no line from 127.0.0.1:${port} within 30 s`)))
    socket.setEncoding("latin1")
    socket.on("data", (chunk: string) => {
      data += chunk
      if (data.includes("\n")) {
        socket.destroy()
        resolve(data.slice(0, data.indexOf("\n")).trim())
      }
    })
    socket.on("error", reject)
    socket.on("close", () => reject(new Error(`127.0.0.1:${port} closed after ${JSON.stringify(data)}`)))
  })

/** Waits as `stoat up --wait` does (the guest's signal, then the ssh probe), then reads sshd's banner. */
export const sshBannerOnceReady = async (root: string, vm: VmRef, port: number, timeoutMs: number): Promise<string> => {
  const layer = Layer.mergeAll(hypervisorAt(root), QemuGuestSignalsLive, GuestTransportLive)
  await Effect.runPromise(awaitSsh(vm, port, timeoutMs).pipe(Effect.provide(layer)))
  return sshBanner(port)
}

/** Runs one ImageBuilder call over the shared tiny cache; the typed failure comes back as Left. */
export const build = <A, E>(root: string, use: (images: Context.Tag.Service<ImageBuilder>) => Effect.Effect<A, E>) =>
  Effect.runPromise(
    Effect.either(Effect.flatMap(ImageBuilder, use)).pipe(
      Effect.provide(makeQemuImageBuilder({ tinyCacheDir }).pipe(Layer.provide(dataRootAt(root))))
    )
  )

/** Like `call`, but a failure throws with its message. */
export const ok = async <A, E>(
  root: string,
  use: (hypervisor: Context.Tag.Service<Hypervisor>) => Effect.Effect<A, E>
): Promise<A> => {
  const result = await call(root, use)
  if (Either.isLeft(result)) throw new Error(`expected success, got ${JSON.stringify(result.left)}`)
  return result.right
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export const elapsed = (since: number) => Math.round(performance.now() - since)

/**
 * A VM folder `root/name`, its work share and a guest host key, and a plan that boots the tiny
 * guest from them (256 MiB, one CPU, a free SSH port); `extra` overrides any field.
 */
export const tinyGuestPlan = async (
  root: string,
  image: TinyGuestImage,
  name: string,
  extra: Partial<BootPlan> = {}
): Promise<BootPlan> => {
  const vm = { name, dir: join(root, name) }
  await mkdir(vm.dir)
  const workShare = join(root, "shared", name)
  await mkdir(workShare, { recursive: true })
  const hostKeyPath = join(root, "guest_host_ed25519_key")
  if (!existsSync(hostKeyPath))
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f", hostKeyPath])
  return {
    vm,
    ramMb: 256,
    cpus: 1,
    sshPort: await freePort(),
    forwards: [],
    kernel: { path: image.kernel, initrd: image.initrd, append: image.kernelArgs },
    workShare,
    display: "vnc",
    guestIdentity: {
      authorizedKeys: "",
      hostKey: Redacted.make(readFileSync(hostKeyPath, "utf8")),
      hostname: guestHostname(name)
    },
    ...extra
  }
}
