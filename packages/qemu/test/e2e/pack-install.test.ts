/**
 * Packs @stoat/wire, @stoat/core and @stoat/qemu with `pnpm pack`, installs the three tarballs
 * into a throwaway project with plain `npm` (better-sqlite3 and ssh2 compile from source there),
 * type-checks harness tests against them and runs them with that project's own vitest:
 * testLayer without QEMU, withVm with real tiny guests, and withVm on a PATH without QEMU.
 *
 * The npm install costs 1.5 to 2 minutes on 2 cores (mostly compiling better-sqlite3); downloads come from
 * npm's cache after the first run (--prefer-offline). A missing QEMU fails this suite.
 */
import { spawn } from "node:child_process"
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  existsSync
} from "node:fs"
import { tmpdir } from "node:os"
import { delimiter, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { requireQemu, tinyCacheDir } from "../support.js"

const repo = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../../..")
const fixtures = fileURLToPath(new URL("./consumer/", import.meta.url))
const PACKAGES = ["wire", "core", "qemu"] as const
const MINUTE = 60_000

interface Run {
  readonly code: number | null
  readonly output: string
  readonly ms: number
}

/** Runs a program to completion (killed after `timeoutMs`), keeping stdout and stderr interleaved for diagnosis. */
const run = (
  cmd: string,
  args: ReadonlyArray<string>,
  opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }
): Promise<Run> =>
  new Promise((done, fail) => {
    const started = performance.now()
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const timer = setTimeout(() => {
      output += `\n[killed: still running after ${opts.timeoutMs} ms]`
      child.kill("SIGKILL")
    }, opts.timeoutMs)
    child.on("error", fail)
    child.on("close", (code) => {
      clearTimeout(timer)
      done({ code, output, ms: Math.round(performance.now() - started) })
    })
  })

const succeeded = (what: string, result: Run): Run => {
  if (result.code !== 0) throw new Error(`${what} failed (exit ${result.code}):\n${result.output.slice(-6_000)}`)
  return result
}

/** One tarball's manifest and file list. */
const readTarball = async (tarball: string) => {
  const list = succeeded(`tar -tzf ${tarball}`, await run("tar", ["-tzf", tarball], { cwd: repo, timeoutMs: MINUTE }))
  const manifest = succeeded(
    `tar -xzOf ${tarball}`,
    await run("tar", ["-xzOf", tarball, "package/package.json"], { cwd: repo, timeoutMs: MINUTE })
  )
  return { files: list.output.trim().split("\n"), manifest: JSON.parse(manifest.output) as Record<string, unknown> }
}

/** Processes whose command line mentions `path` (QEMU's names its initrd, inside the VM's folder). */
const processesMentioning = (path: string): string[] =>
  readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")
        return cmdline.includes(path) ? [`${pid}: ${cmdline}`] : []
      } catch {
        return [] // exited while we looked
      }
    })

/** A folder of links to every program on PATH except QEMU's system emulators: a host "without QEMU". */
const pathWithoutQemu = (dir: string): string => {
  mkdirSync(dir)
  for (const source of (process.env["PATH"] ?? "").split(delimiter)) {
    const entries = (() => {
      try {
        return readdirSync(source)
      } catch {
        return []
      }
    })()
    for (const name of entries) {
      if (name.startsWith("qemu-system-") || existsSync(join(dir, name))) continue
      symlinkSync(join(source, name), join(dir, name))
    }
  }
  return dir
}

interface ReportedTest {
  readonly fullName: string
  readonly status: string
  readonly failureMessages: ReadonlyArray<string>
}

describe("@stoat/wire, core and qemu installed from their tarballs with npm", () => {
  const work = mkdtempSync(join(tmpdir(), "stoat-pack-"))
  const tarballs = join(work, "tarballs")
  const project = join(work, "consumer")
  const noQemuBin = join(work, "bin-without-qemu")
  /** TMPDIR of the nested runs, so every VM folder withVm makes is ours to account for. */
  const vmTmp = join(work, "vm-tmp")
  const packed = new Map<string, string>()

  const rootManifest = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
    devDependencies: Record<string, string>
  }
  const coreManifest = JSON.parse(readFileSync(join(repo, "packages/core/package.json"), "utf8")) as {
    devDependencies: Record<string, string>
  }

  /** The consumer's own vitest, with nothing of the outer vitest run in its environment. */
  const vitest = async (file: string, env: NodeJS.ProcessEnv = {}) => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("VITEST")))
    const report = join(work, `${file}.report.json`)
    const result = await run(
      process.execPath,
      [
        "node_modules/vitest/vitest.mjs",
        "run",
        `test/${file}`,
        "--reporter=verbose",
        "--reporter=json",
        `--outputFile.json=${report}`
      ],
      {
        cwd: project,
        env: { ...base, NO_COLOR: "1", TMPDIR: vmTmp, STOAT_TINY_CACHE: tinyCacheDir, ...env },
        timeoutMs: 10 * MINUTE
      }
    )
    console.log(`consumer vitest ${file}: exit ${result.code} in ${result.ms} ms`)
    const parsed = existsSync(report)
      ? (JSON.parse(readFileSync(report, "utf8")) as { testResults: Array<{ assertionResults: ReportedTest[] }> })
      : undefined
    if (parsed === undefined) throw new Error(`vitest wrote no report for ${file}:\n${result.output.slice(-6_000)}`)
    const tests = parsed.testResults.flatMap((file) => file.assertionResults)
    return { ...result, tests, status: Object.fromEntries(tests.map((test) => [test.fullName, test.status])) }
  }

  beforeAll(async () => {
    requireQemu()
    mkdirSync(tarballs)
    mkdirSync(vmTmp)
    for (const name of PACKAGES) {
      const result = succeeded(
        `pnpm pack @stoat/${name}`,
        await run("pnpm", ["pack", "--pack-destination", tarballs], {
          cwd: join(repo, "packages", name),
          timeoutMs: 2 * MINUTE
        })
      )
      console.log(`pnpm pack @stoat/${name}: ${result.ms} ms`)
    }
    for (const file of readdirSync(tarballs))
      packed.set(/^stoat-([a-z]+)-/.exec(file)?.[1] ?? file, join(tarballs, file))

    mkdirSync(join(project, "test"), { recursive: true })
    for (const file of readdirSync(fixtures)) {
      const target = file.endsWith(".harness.ts") ? join("test", file.replace(/\.harness\.ts$/, ".test.ts")) : file
      cpSync(join(fixtures, file), join(project, target))
    }
    const manifest = {
      name: "stoat-consumer",
      private: true,
      type: "module",
      dependencies: {
        ...Object.fromEntries(PACKAGES.map((name) => [`@stoat/${name}`, `file:${packed.get(name)}`])),
        effect: coreManifest.devDependencies["effect"]
      },
      devDependencies: Object.fromEntries(
        ["vitest", "typescript", "@types/node"].map((name) => [name, rootManifest.devDependencies[name]])
      )
    }
    writeFileSync(join(project, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`)

    // node-gyp must use the installed Node headers: nothing can be downloaded from nodejs.org.
    const env = { ...process.env, npm_config_nodedir: process.env["npm_config_nodedir"] ?? "/usr", JOBS: "max" }
    const install = succeeded(
      "npm install of the tarballs",
      await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
        cwd: project,
        env,
        timeoutMs: 10 * MINUTE
      })
    )
    console.log(`npm install --prefer-offline (3 tarballs, vitest, typescript; native builds): ${install.ms} ms`)
    pathWithoutQemu(noQemuBin)
  }, 15 * MINUTE)

  afterAll(() => (process.env["KEEP_PACK"] ? undefined : rmSync(work, { recursive: true, force: true })))

  it("packs each package with ESM exports and their types, pinned sibling versions, and only built files", async () => {
    expect([...packed.keys()].sort()).toEqual([...PACKAGES].sort())
    for (const name of PACKAGES) {
      const { files, manifest } = await readTarball(packed.get(name)!)
      expect(JSON.stringify(manifest)).not.toContain("workspace:")
      expect(manifest).toMatchObject({ name: `@stoat/${name}`, type: "module" })
      expect(manifest["private"]).toBeUndefined()
      for (const [dependency, range] of Object.entries((manifest["dependencies"] ?? {}) as Record<string, string>)) {
        if (dependency.startsWith("@stoat/")) expect(range, `${name} → ${dependency}`).toBe(manifest["version"])
      }
      const exported = Object.values(
        manifest["exports"] as Record<string, string | { types: string; default: string }>
      ).flatMap((entry) => (typeof entry === "string" ? [entry] : [entry.types, entry.default]))
      for (const path of exported)
        expect(files, `${name} exports ${path}`).toContain(`package/${path.replace(/^\.\//, "")}`)
      expect(files).toContain("package/README.md")
      const unexpected = files.filter(
        (file) => !/^package\/(package\.json|README\.md|dist\/.+\.(js|d\.ts))$/.test(file)
      )
      expect(unexpected, `${name} ships only dist/*.js, dist/*.d.ts, package.json and README.md`).toEqual([])
      expect(files.filter((file) => /\.test\.|\/test\//.test(file))).toEqual([])
    }
  })

  it("type-checks the consumer's harness tests against the installed packages' types", async () => {
    const result = await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.json"], {
      cwd: project,
      timeoutMs: 3 * MINUTE
    })
    expect(result.output).toBe("")
    expect(result.code).toBe(0)
  })

  it("runs a testLayer harness in the consumer on a PATH without QEMU", async () => {
    const result = await vitest("test-layer.test.ts", { PATH: noQemuBin })
    expect(result.status, result.output).toEqual({
      "a harness embedding @stoat/core with testLayer creates, starts and execs in a VM, and gets typed errors, without QEMU":
        "passed"
    })
    expect(result.code).toBe(0)
  })

  it("runs a withVm harness in the consumer: real VMs, exec over ssh2, and nothing left after a failing test", async () => {
    const result = await vitest("with-vm.test.ts")
    expect(result.status, result.output).toEqual({
      "withVm with one VM for the file runs shell commands and argv in the VM": "passed",
      "withVm with one VM for the file exposes what an ssh client needs": "passed",
      "withVm with a fresh VM per test fails on purpose after leaving a marker in its VM": "failed",
      "withVm with a fresh VM per test gets a VM without the previous test's marker": "passed"
    })
    const failed = result.tests.find((test) => test.status === "failed")
    expect(failed?.failureMessages.join("\n")).toContain("failing on purpose")
    expect(processesMentioning(vmTmp)).toEqual([])
    expect(readdirSync(vmTmp).filter((entry) => entry.startsWith("stoat-test-vm-"))).toEqual([])
  })

  it("skips withVm tests with the reason, and a warning, on a PATH without QEMU; fails them when told to", async () => {
    const result = await vitest("without-qemu.test.ts", { PATH: noQemuBin })
    expect(result.status, result.output).toEqual({
      "withVm on a host without QEMU is skipped with the reason": "skipped",
      "withVm per test on a host without QEMU is skipped with the reason too": "skipped",
      "withVm that must not skip, on a host without QEMU fails with the reason": "failed"
    })
    const reason = "qemu-system-x86_64 was not found on PATH: withVm needs QEMU"
    expect(result.tests.find((test) => test.status === "failed")?.failureMessages.join("\n")).toContain(reason)
    for (const vm of ["absent-vm", "absent-per-test-vm"]) {
      expect(result.output).toContain(`withVm(${vm}): SKIPPING the tests that need this VM. ${reason}`)
    }
    expect(result.output).not.toContain("withVm(required-vm): SKIPPING")
    // vitest's verbose reporter prints the skip note next to each skipped test.
    expect(result.output.match(new RegExp(`↓ .*is skipped with the reason.*\\[${reason}`, "g"))).toHaveLength(2)
    expect(result.code).toBe(1)
  })
})
