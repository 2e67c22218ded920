import { execFileSync, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

export const BIN = fileURLToPath(new URL("../bin/run.js", import.meta.url))

export interface RunResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** Runs the real stoat binary with its own STOAT_HOME and no terminal, in `cwd` (a project folder) when given. */
export const stoat = (
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  input = "",
  cwd?: string
): Promise<RunResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"],
      ...(cwd !== undefined ? { cwd } : {})
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(input)
  })

/** Parses `--json` output: every line one envelope, exactly one result, last. */
export const envelopes = (stdout: string): Array<Record<string, any>> => {
  const lines = stdout.split("\n").filter((line) => line !== "")
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, any>)
  const results = parsed.filter((line) => line["type"] === "result")
  if (results.length !== 1 || parsed.at(-1)?.["type"] !== "result")
    throw new Error(`expected exactly one final result line, got:\n${stdout}`)
  return parsed
}

export const result = (stdout: string): Record<string, any> => envelopes(stdout).at(-1)!

export const tempHome = (): string => mkdtempSync(join(tmpdir(), "stoat-cli-"))

/** A stopped tiny VM's vm.toml, written by hand (no tiny-guest build needed). */
export const vmToml = (name: string, port: number) =>
  `name = "${name}"\nmode = "disk"\nos = "tiny"\nimage = "tiny"\nbackend = "direct"\nram = 256\ncpus = 1\ndisk = "1G"\nsshport = ${port}\nsshuser = "root"\n`

/** A fresh data root holding these files, by path inside it: `{ "dev/vm.toml": vmToml("dev", 2200) }`. */
export const homeWith = (files: Record<string, string>): string => {
  const home = tempHome()
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(home, path)), { recursive: true })
    writeFileSync(join(home, path), text)
  }
  return home
}

/** The e2e suites need QEMU; without it they fail loudly instead of skipping. */
export const requireQemu = (): void => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

/** An e2e data root's environment: one tiny-guest build is shared by every suite (it takes ~20 s to assemble). */
export const e2eEnv = (home: string): Record<string, string> => ({
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
})
