import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { advise, adviseFirst, adviseLookup, catalogWords, NotRunning, startIt, toErrorInfo } from "../src/errors.js"
import { operationByKey } from "../src/operations/index.js"

const packages = fileURLToPath(new URL("../../", import.meta.url))
const core = join(packages, "core", "src")
const qemu = join(packages, "qemu", "src")
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

describe("hints", () => {
  it("name catalog operations only, wherever core and qemu give one", () => {
    const named = [core, qemu].flatMap((dir) =>
      sources(dir).flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/(?:operation: |adviseLookup\()"([a-z_.]+)"/g)].map((match) => ({
          file,
          key: match[1]!
        }))
      )
    )
    expect(named.length).toBeGreaterThan(10)
    for (const { file, key } of named) expect(operationByKey(key), `${key} in ${file}`).toBeDefined()
  })

  it("join the message after '; ' in the words asked for, the catalog's own by default", () => {
    const error = new NotRunning({ message: 'VM "web" is not running', subject: "web", hint: startIt("web") })
    expect(toErrorInfo(error).message).toBe('VM "web" is not running; start it with vm.start {"vm":"web"}')
    expect(toErrorInfo(error, (hint) => `${hint.advice} somehow`).message).toBe(
      'VM "web" is not running; start it somehow'
    )
    expect(catalogWords(adviseLookup("vm.list"))).toBe("see vm.list")
    expect(catalogWords(adviseFirst("stop it", { operation: "vm.stop", input: { vm: "web" } }))).toBe(
      'stop it first with vm.stop {"vm":"web"}'
    )
    expect(
      catalogWords(
        advise(
          "restart it",
          { operation: "vm.stop", input: { vm: "a" } },
          { operation: "vm.start", input: { vm: "a" } }
        )
      )
    ).toBe('restart it with vm.stop {"vm":"a"}, then vm.start {"vm":"a"}')
  })
})
