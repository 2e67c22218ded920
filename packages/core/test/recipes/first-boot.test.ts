import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { applyRecipes, createVm, getVm, startVm, updateVm } from "../../src/operations/index.js"
import { MARKER_DIR } from "../../src/recipes/first-boot.js"
import { harness } from "../harness.js"

const SECRET = "first-boot-secret-5e1f"

describe("first-boot delivery through cloud-init", () => {
  it("writes the recipes into the seed, runs them in order with markers, and the first apply records instead of rerunning", async () => {
    const h = harness()
    for (const [name, manifest] of [
      ["base", ""],
      [
        "app",
        'depends = ["base"]\n[params.key]\ntype = "secret"\nrequired = true\n[params.port]\ntype = "int"\ndefault = 8080\n[outputs]\nport = "p"\n'
      ]
    ] as const) {
      mkdirSync(join(h.root, "recipes", name), { recursive: true })
      writeFileSync(
        join(h.root, "recipes", name, "recipe.toml"),
        `schema = 3\nname = "${name}"\nscript = "run.sh"\n${manifest}`
      )
      writeFileSync(join(h.root, "recipes", name, "run.sh"), `echo ${name}\n`)
    }
    const base = join(h.root, "noble-server-cloudimg-amd64.img")
    writeFileSync(base, "")
    h.hypervisor.disks.set(base, { size: 2 * 1024 ** 3, snapshots: [] })
    await h.ok(createVm, { name: "cloudy", image_path: base, recipes: ["app", "base"] })
    await h.ok(updateVm, { vm: "cloudy", secrets: { app: { key: SECRET } } })

    // The guest: cloud-init is done, the markers are what the runner would have written, nothing else runs.
    const markers = new Map<string, string>()
    const scripts: string[] = []
    h.guest.execHandler = (argv) => {
      if (argv[0] === "cloud-init") return { exitCode: 0, stdout: "status: done\n" }
      const path = argv.at(-1) ?? ""
      const marker = markers.get(path)
      if (argv.includes("stoat_marker")) return marker !== undefined ? { exitCode: 0, stdout: marker } : { exitCode: 0 }
      scripts.push(argv.join(" "))
      return { exitCode: 0 }
    }
    await h.ok(startVm, { vm: "cloudy", wait: true })
    const userData = readFileSync(join(h.vmDir("cloudy"), "ovl", "seed", "user-data"), "utf8")
    expect(statSync(join(h.vmDir("cloudy"), "ovl", "seed", "user-data")).mode & 0o777).toBe(0o600)
    expect(userData).toContain("/var/lib/stoat/recipes/base.sh")
    expect(userData).toContain("/var/lib/stoat/recipes/app.sh")
    expect(userData).toContain("/run/stoat/secrets-app.env")
    // The secret sits in the 0600 secrets file entry only, never in a script.
    const runner =
      /recipes\/base\.sh[^\n]*?' ([0-9a-f]{64}) ([0-9a-f]{64})[^\n]*?recipes\/app\.sh[^\n]*?' ([0-9a-f]{64}) ([0-9a-f]{64})/.exec(
        userData
      )
    expect(runner).not.toBeNull()
    expect(userData.split(SECRET).length - 1).toBe(1)
    markers.set(`${MARKER_DIR}/base`, `${runner![1]}\n${runner![2]}\n`)
    markers.set(`${MARKER_DIR}/app`, `${runner![3]}\n${runner![4]}\n---\nport=8080\n`)

    const applied = await h.ok(applyRecipes, { vm: "cloudy" })
    expect(applied.applied).toEqual([])
    expect(scripts.filter((s) => s === "sudo -n sh -s")).toEqual([])
    expect((await h.ok(getVm, { vm: "cloudy" })).recipes_detail).toMatchObject([
      { name: "app", applied: true, outputs: { port: "8080" } },
      { name: "base", applied: true }
    ])
    const log = readFileSync(join(h.vmDir("cloudy"), "last-provision.log"), "utf8")
    expect(log).toContain("recorded base from first boot")
    expect(log.trimEnd().split("\n").at(-1)).toBe("done")
  })
})
