import { Effect, Either } from "effect"
import { adviseLookup } from "../../src/errors.js"
import { describe, expect, it } from "vitest"
import { KNOWN_IMAGES, IMAGE_IDS, findImage, inferByo, lookupImage, validateImageId } from "../../src/images/known.js"

const lookup = (id: string) => Effect.runSync(Effect.either(lookupImage(id)))

describe("image catalog", () => {
  it("holds the reference ids plus the two local builds, each once", () => {
    expect(IMAGE_IDS).toEqual([
      "ubuntu-24.04",
      "debian-13",
      "fedora-cloud",
      "arch-cloud",
      "alpine-cloud",
      "almalinux-9",
      "rocky-9",
      "opensuse-leap-16.0",
      "tiny",
      "debian-12-mini"
    ])
    expect(new Set(IMAGE_IDS).size).toBe(IMAGE_IDS.length)
    for (const id of IMAGE_IDS) expect(validateImageId(id)).toBeUndefined()
  })

  it("describes each entry consistently", () => {
    for (const entry of KNOWN_IMAGES) {
      expect(entry.sshUser).toBe(entry.id === "tiny" ? "root" : "stoat")
      // Downloads are cloud images; only stoat's own builds boot directly.
      expect(entry.backend).toBe(entry.local ? "direct" : "cloudinit")
      expect(entry.approxBytes).toBeGreaterThan(0)
      expect(entry.defaultDisk).toMatch(/^[1-9][0-9]*[KMGT]?$/)
      expect(entry.local).toBe(entry.source.kind === "local")
      if (entry.source.kind === "url") {
        expect(entry.source.url).toMatch(/^https:\/\//)
        expect(entry.source.url.endsWith(`/${entry.source.file}`)).toBe(true)
        if (entry.source.checksum) expect(entry.source.checksum.url).toMatch(/^https:\/\//)
      }
    }
    expect(findImage("alpine-cloud")?.source).toMatchObject({ kind: "url", checksum: null })
    expect(findImage("debian-13")?.source).toMatchObject({ checksum: { format: "sha512sums" } })
    expect(findImage("fedora-cloud")?.source).toMatchObject({ checksum: { format: "bsd" } })
    expect(findImage("arch-cloud")?.source).toMatchObject({ checksum: { format: "sidecar" } })
    expect(findImage("tiny")).toMatchObject({
      os: "tiny",
      backend: "direct",
      local: true,
      defaultRamMb: 256,
      defaultCpus: 1
    })
    // The bundled debian guest's login user (default_ssh_user), on a disk the build's root overlays.
    expect(findImage("debian-12-mini")).toMatchObject({
      os: "debian",
      backend: "direct",
      local: true,
      sshUser: "stoat",
      defaultDisk: "4G",
      defaultCpus: 1
    })
    expect(findImage("rocky-9")).toMatchObject({ defaultDisk: "12G", cpuModel: "host", requiredCpu: "x86-64-v2" })
  })

  it("validates ids before looking them up", () => {
    for (const bad of ["", "-x", ".hidden", "a/b", "a\\b", "~", "x~y", "ubuntu 24.04", "../isos"]) {
      const result = lookup(bad)
      expect(Either.isLeft(result) && result.left.code).toBe("invalid_spec")
    }
  })

  it("answers an unknown id with no_such_image, the closest id and a hint to look up the image list", () => {
    const result = lookup("ubunt-24.04")
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isLeft(result)) {
      expect(result.left.code).toBe("no_such_image")
      expect(result.left.message).toContain('"ubuntu-24.04"')
      expect(result.left.hint).toEqual(adviseLookup("image.list"))
      expect(result.left.subject).toBe("ubunt-24.04")
    }
    const far = lookup("windows-11")
    expect(Either.isLeft(far) && far.left.message).not.toContain("did you mean")
    expect(Either.getOrThrow(lookup("debian-13")).os).toBe("debian")
  })
})

describe("BYO filename inference", () => {
  it.each([
    ["alpine-virt-3.24.1-x86_64.iso", "alpine", "apkovl"],
    ["alpine-standard.ISO", "alpine", "apkovl"],
    ["generic_alpine-3.24.1-x86_64-bios-cloudinit-r0.qcow2", "alpine", "cloudinit"],
    ["noble-server-cloudimg-amd64.img", "ubuntu", "cloudinit"],
    ["mystery-cloudimg.img", "", "cloudinit"],
    ["ubuntu-24.04-server-cloudimg-amd64.img", "ubuntu", "cloudinit"],
    ["debian-13-genericcloud-amd64.raw", "debian", "cloudinit"],
    ["AlmaLinux-9-GenericCloud-latest.x86_64.qcow2", "almalinux", "cloudinit"],
    ["Rocky-9-GenericCloud-Base.latest.x86_64.qcow2", "rocky", "cloudinit"],
    ["openSUSE-Leap-16.0-Minimal-VM.x86_64-Cloud.qcow2", "opensuse", "cloudinit"],
    ["Fedora-Server-dvd-x86_64-44.iso", "fedora", "ssh"],
    ["mystery.iso", "", "ssh"],
    ["/some/dir/archlinux-2026.08.01-x86_64.iso", "arch", "ssh"]
  ])("%s → os %j, backend %s", (file, os, backend) => {
    expect(inferByo(file)).toEqual({ os, backend })
  })

  it("uses the hints of the guests it is given", () => {
    expect(inferByo("nixos-cloud.qcow2", [{ name: "nixos", filename_hints: ["nixos"] }])).toEqual({
      os: "nixos",
      backend: "cloudinit"
    })
  })
})
