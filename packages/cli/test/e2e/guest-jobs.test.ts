import { execFileSync } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from "node:fs"
import { homedir, tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { copyFrom, copyTo } from "@stoat/core"
import { disposeRuntime, execute } from "../../src/runtime.js"
import { result, stoat, tempHome } from "../helpers.js"

/** The e2e suites need QEMU; without it they fail loudly instead of skipping. */
const requireQemu = () => {
  try {
    execFileSync("qemu-system-x86_64", ["--version"], { stdio: "ignore" })
  } catch {
    throw new Error("qemu-system-x86_64 is not installed: the e2e suite boots real VMs (run scripts/setup.sh)")
  }
}

const VM = "jobs"
const home = tempHome()
const env = {
  STOAT_HOME: home,
  STOAT_TINY_CACHE: process.env["STOAT_TINY_CACHE"] ?? join(homedir(), ".cache", "stoat-test", "tiny-image")
}
const scratch = mkdtempSync(join(tmpdir(), "stoat-e2e-copy-"))
const shared = join(home, "shared", VM)

const envelope = async (...args: string[]) => result((await stoat(["--json", ...args], env)).stdout)
const json = async (...args: string[]) => {
  const answer = await envelope(...args)
  if (!answer["ok"]) throw new Error(`stoat ${args.join(" ")} failed: ${JSON.stringify(answer["error"])}`)
  return answer["data"]
}
const sha256 = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex")
const guestSha256 = async (path: string) => ((await json("exec", VM, "sha256sum", path)).stdout as string).split(" ")[0]

/** Polls a job's state until it is `state` (the wrapper records the pid a moment after the call). */
const untilState = async (job: string, state: string) => {
  for (let i = 0; i < 100; i++) {
    if ((await json("jobs", "status", VM, job)).state === state) return
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  throw new Error(`job ${job} never reached ${state}`)
}

/** The copy operations as an agent calls them: confined to the shared folder (no `unconfined`). */
const agentCopy = (direction: "to" | "from", local: string, remote: string) =>
  execute(direction === "to" ? copyTo : copyFrom, { vm: VM, local, remote })

describe("background jobs, copies and ssh on the tiny guest", () => {
  beforeAll(async () => {
    requireQemu()
    process.env["STOAT_HOME"] = home
    await json("create", VM, "--image", "tiny", "--agent-access", "exec")
    await json("up", VM)
    await json("wait", VM, "--until", "reachable", "--timeout", "2m")
    writeFileSync(join(scratch, "secret"), "top secret")
  })
  afterAll(async () => {
    await disposeRuntime()
    await stoat(["down", VM], env)
    rmSync(scratch, { recursive: true, force: true })
  })

  it("a job outlives the call that started it, then job_wait returns its exit and output", async () => {
    const started = await json("jobs", "start", VM, "--", "sh", "-c", "sleep 4; echo late; echo warn >&2; exit 3")
    expect(started.job_id).toMatch(/^j-[0-9a-f]{8}$/)
    expect(started.dir).toBe(`/run/stoat/jobs/${started.job_id}`)
    // The starting process and its ssh connection are gone; the job is not.
    await untilState(started.job_id, "running")
    const waited = await json("jobs", "wait", "--timeout", "120", VM, started.job_id)
    expect(waited).toEqual({
      job_id: started.job_id,
      state: "exited",
      exit_code: 3,
      stdout_tail: "late\n",
      stderr_tail: "warn\n"
    })
    const listed = await json("jobs", "ls", VM)
    expect(listed.jobs).toContainEqual(
      expect.objectContaining({
        job_id: started.job_id,
        state: "exited",
        user: "root",
        argv: ["sh", "-c", "sleep 4; echo late; echo warn >&2; exit 3"]
      })
    )
  })

  it("job_output reads from an offset, at most max_bytes, and says when more follows", async () => {
    const { job_id } = await json("jobs", "start", VM, "printf", "0123456789")
    await json("jobs", "wait", VM, job_id)
    expect(await json("jobs", "output", "--offset", "3", "--max-bytes", "4", VM, job_id)).toEqual({
      content: "3456",
      size: 10,
      truncated: true
    })
    expect(await json("jobs", "output", "--offset", "7", VM, job_id)).toEqual({
      content: "789",
      size: 10,
      truncated: false
    })
    const plain = await stoat(["jobs", "output", VM, job_id], env)
    expect(plain.stdout).toBe("0123456789")
  })

  it("argv reaches the job verbatim: quotes, $(), flags, an empty word", async () => {
    const words = ["it's", "$(id)", "`id`", "-n", "a  b", ""]
    const { job_id } = await json(
      "jobs",
      "start",
      "--cwd",
      "/tmp",
      "--env",
      "GREETING=$(hi)",
      VM,
      "sh",
      "-c",
      'printf "%s|" "$@" "$GREETING" "$PWD"',
      "x",
      ...words
    )
    expect((await json("jobs", "wait", VM, job_id)).stdout_tail).toBe(`${[...words, "$(hi)", "/tmp"].join("|")}|`)
  })

  it("kill signals a running job once: signaled true, then false", async () => {
    const { job_id } = await json("jobs", "start", VM, "sh", "-c", "sleep 300 & wait")
    await untilState(job_id, "running")
    expect(await json("jobs", "kill", VM, job_id)).toEqual({ job_id, state: "exited", exit_code: 143, signaled: true })
    expect(await json("jobs", "kill", VM, job_id)).toEqual({ job_id, state: "exited", exit_code: 143, signaled: false })
    // The job's whole process group got it: no sleep 300 is left.
    expect((await json("exec", VM, "sh", "-c", "ps | grep 'sleep 300' | grep -v grep || true")).stdout).toBe("")
    expect((await envelope("jobs", "kill", "--signal", "SIGTERM", VM, job_id))["error"]).toMatchObject({
      code: "usage"
    })
    expect((await envelope("jobs", "status", VM, "j-nothere"))["error"]).toMatchObject({ code: "usage" })
    expect((await envelope("jobs", "status", VM, "j-00000000"))["error"]).toMatchObject({ code: "not_found" })
  })

  it("copies 64 MiB to and from the guest with both cp syntaxes; the sha256 matches", async () => {
    const big = join(scratch, "big.bin")
    writeFileSync(big, randomBytes(64 * 1024 * 1024))
    expect(await json("cp", big, `${VM}:/tmp/big.bin`)).toEqual({
      vm: VM,
      direction: "to_guest",
      local: big,
      remote: "/tmp/big.bin"
    })
    expect(await guestSha256("/tmp/big.bin")).toBe(sha256(big))
    const back = join(scratch, "back.bin")
    expect(await json("cp", "--vm", VM, "--direction", "from", "--remote", "/tmp/big.bin", "--local", back)).toEqual({
      vm: VM,
      direction: "from_guest",
      local: back,
      remote: "/tmp/big.bin"
    })
    expect(sha256(back)).toBe(sha256(big))
    // A relative host path is relative to the current directory.
    const relative = await stoat(["--json", "cp", `${VM}:/etc/hostname`, "hostname.txt"], env)
    expect(result(relative.stdout)["data"]["local"]).toBe(join(process.cwd(), "hostname.txt"))
    rmSync(join(process.cwd(), "hostname.txt"))
    // Exactly one side is the guest's; a drive letter is not a VM.
    for (const operands of [
      ["a", "b"],
      [`${VM}:/x`, `${VM}:/y`],
      ["C:/x", "y"]
    ])
      expect((await envelope("cp", ...operands))["error"], operands.join(" ")).toMatchObject({ code: "usage" })
    expect((await envelope("cp", "--vm", VM, "--direction", "to", "--local", big))["error"]).toMatchObject({
      code: "usage"
    })
  })

  it("an agent's copy_to / copy_from stay in the shared folder: every escape is access_denied, special files usage", async () => {
    mkdirSync(join(shared, "sub"), { recursive: true })
    writeFileSync(join(shared, "inside.txt"), "inside")
    expect(await agentCopy("to", "inside.txt", "/tmp/inside.txt")).toEqual({
      ok: true,
      value: { vm: VM, local: join(shared, "inside.txt"), remote: "/tmp/inside.txt", to_remote: true }
    })
    expect(await agentCopy("from", "sub/hostname", "/etc/hostname")).toMatchObject({ ok: true })
    expect(readFileSync(join(shared, "sub", "hostname"), "utf8")).toBe(`${VM}\n`)
    symlinkSync(join(scratch, "secret"), join(shared, "out-link"))
    symlinkSync(join(scratch, "missing"), join(shared, "dangling"))
    symlinkSync(scratch, join(shared, "out-dir"))
    symlinkSync("/dev/zero", join(shared, "zero"))
    for (const local of [
      join(scratch, "secret"),
      "/etc/passwd",
      "../../etc/passwd",
      "sub/../../x",
      "out-link",
      "dangling",
      "out-dir/secret",
      "zero"
    ]) {
      expect(await agentCopy("to", local, "/tmp/leak"), local).toMatchObject({
        ok: false,
        error: { code: "access_denied" }
      })
      expect(await agentCopy("from", local, "/etc/hostname"), local).toMatchObject({
        ok: false,
        error: { code: "access_denied" }
      })
    }
    expect(readFileSync(join(scratch, "secret"), "utf8")).toBe("top secret")
    expect(existsSync(join(scratch, "missing"))).toBe(false)
    expect((await json("exec", VM, "sh", "-c", "test -e /tmp/leak && echo leaked || echo none")).stdout).toBe("none\n")
    execFileSync("mkfifo", [join(shared, "fifo")])
    for (const local of ["fifo", "sub"]) {
      expect(await agentCopy("to", local, "/tmp/x"), local).toMatchObject({ ok: false, error: { code: "usage" } })
      expect(await agentCopy("from", local, "/etc/hostname"), local).toMatchObject({
        ok: false,
        error: { code: "usage" }
      })
    }
  })

  it("a folder swapped for a symlink to outside while copy_from runs: the file lands in the folder that was checked", async () => {
    await json("exec", VM, "sh", "-c", "head -c 33554432 /dev/urandom > /tmp/swap.bin")
    mkdirSync(join(shared, "swap"))
    const copying = agentCopy("from", "swap/file.bin", "/tmp/swap.bin")
    // Swap as soon as the transfer's temp file exists in the folder.
    for (let i = 0; i < 2000 && !readdirSync(join(shared, "swap")).some((name) => name.includes(".part-")); i++)
      await new Promise((resolve) => setTimeout(resolve, 5))
    renameSync(join(shared, "swap"), join(shared, "swap-checked"))
    symlinkSync(scratch, join(shared, "swap"))
    expect(await copying).toMatchObject({ ok: true })
    expect(existsSync(join(scratch, "file.bin"))).toBe(false)
    expect(sha256(join(shared, "swap-checked", "file.bin"))).toBe(await guestSha256("/tmp/swap.bin"))
  })

  it("stoat ssh runs a command with the system ssh client; ssh-command prints a working command line", async () => {
    expect((await stoat(["ssh", VM, "true"], env)).code).toBe(0)
    expect((await stoat(["ssh", VM, "exit", "5"], env)).code).toBe(5)
    const uname = await stoat(["ssh", VM, "uname", "-s"], env)
    expect(uname.stdout).toBe("Linux\n")
    const { argv } = await json("ssh-command", VM)
    expect(argv).toEqual(
      expect.arrayContaining([
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "BatchMode=yes",
        "-i",
        join(home, "id_stoat"),
        "root@127.0.0.1"
      ])
    )
    expect(execFileSync(argv[0], [...argv.slice(1), "echo", "via-ssh-command"], { encoding: "utf8" })).toBe(
      "via-ssh-command\n"
    )
    const line = await stoat(["ssh-command", VM], env)
    expect(execFileSync("sh", ["-c", `${line.stdout.trim()} echo from-the-line`], { encoding: "utf8" })).toBe(
      "from-the-line\n"
    )
    expect((await stoat(["--json", "ssh", VM, "true"], env)).code).toBe(2)
  })

  it("a guest restarted under a running job makes it unknown; list_jobs works while the VM is stopped", async () => {
    const { job_id } = await json("jobs", "start", VM, "sleep", "300")
    await untilState(job_id, "running")
    await json("down", VM)
    const stopped = await json("jobs", "ls", VM)
    expect(stopped.jobs.map((job: { job_id: string }) => job.job_id)).toContain(job_id)
    expect(stopped.jobs.every((job: { state: string }) => job.state === "unknown")).toBe(true)
    expect((await envelope("jobs", "status", VM, job_id))["error"]).toMatchObject({ code: "not_running" })
    await json("up", VM)
    await json("wait", VM, "--until", "reachable", "--timeout", "2m")
    expect(await json("jobs", "status", VM, job_id)).toEqual({ job_id, state: "unknown" })
    expect(await json("jobs", "kill", VM, job_id)).toEqual({ job_id, state: "unknown", signaled: false })
    expect((await envelope("jobs", "output", VM, job_id))["error"]).toMatchObject({ code: "not_found" })
  })
})
