/**
 * What a person or a script gets through a pipe, against one real tiny guest: every byte written
 * before stoat exits (failing commands and `--json` included), caps that are said out loud, and
 * errors that name sizes instead of echoing what was sent.
 */
import { spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, e2eEnv, requireQemu, result, stoat, tempHome } from "../helpers.js"

const home = tempHome()
const env = e2eEnv(home)
const VM = "out1"
const MiB = 1024 * 1024

/** Runs a shell pipeline with `stoat` meaning the real binary (stdout and stderr are pipes, never a terminal). */
const pipeline = (script: string) =>
  new Promise<{ code: number; stdout: Buffer; stderr: string }>((resolve, reject) => {
    const child = spawn("sh", ["-c", `stoat() { "${process.execPath}" "${BIN}" "$@"; }\n${script}`], {
      env: { ...process.env, NO_COLOR: "1", ...env }
    })
    const out: Buffer[] = []
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out), stderr }))
  })

/**
 * Feeds `total` bytes of `a` to stoat's stdin as fast as it takes them; answers how many it took
 * before it exited, with its output.
 */
const feed = (args: ReadonlyArray<string>, total: number) =>
  new Promise<{ code: number; stdout: string; stderr: string; taken: number }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: "1", ...env },
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    let taken = 0
    let closed = false
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.stdin.on("error", () => undefined) // EPIPE once stoat stops reading: what it is meant to do
    child.on("error", reject)
    child.on("close", (code) => {
      closed = true
      resolve({ code: code ?? -1, stdout, stderr, taken })
    })
    const chunk = Buffer.alloc(MiB, 0x61)
    let queued = 0
    const pump = () => {
      while (!closed && queued < total) {
        queued += chunk.length
        const more = child.stdin.write(chunk, (error) => {
          if (!error) taken += chunk.length
        })
        if (!more) return void child.stdin.once("drain", pump)
      }
      if (queued >= total) child.stdin.end()
    }
    pump()
  })

describe("output through pipes on the tiny guest", () => {
  beforeAll(async () => {
    requireQemu()
    expect(
      result((await stoat(["--json", "create", VM, "--image", "tiny", "--agent-access", "exec"], env)).stdout)["ok"]
    ).toBe(true)
    expect(result((await stoat(["--json", "up", VM], env)).stdout)["ok"]).toBe(true)
    expect(
      result((await stoat(["--json", "wait", VM, "--until", "reachable", "--timeout", "2m"], env)).stdout)["ok"]
    ).toBe(true)
  })
  afterAll(async () => {
    await stoat(["down", VM], env)
  })

  it("a failing command's output arrives whole through a pipe, with its exit status (it stopped at 64 KiB)", async () => {
    const failing = await pipeline(`stoat exec ${VM} -- sh -c 'head -c 900000 /dev/urandom; exit 3' | wc -c`)
    expect(failing.stdout.toString()).toBe("900000\n")
    const status = await pipeline(`stoat exec ${VM} -- sh -c 'head -c 900000 /dev/zero; exit 3' > /dev/null; echo $?`)
    expect(status.stdout.toString()).toBe("3\n")
    const both = await pipeline(
      `stoat exec ${VM} -- sh -c 'head -c 800000 /dev/zero; head -c 700000 /dev/zero >&2; exit 5' 2>&1 >/dev/null | wc -c`
    )
    expect(both.stdout.toString()).toBe("700000\n")
  })

  it("exec caps each stream at 1 MiB and says so on stderr, succeeding or failing", async () => {
    for (const command of ["head -c 5000000 /dev/urandom", "head -c 5000000 /dev/urandom; exit 4"]) {
      const run = await pipeline(`stoat exec ${VM} -- sh -c '${command}' | wc -c`)
      expect(run.stdout.toString()).toBe(`${MiB}\n`)
      expect(run.stderr).toMatch(
        /^stoat: exec: output cut at 1 MiB per stream; for all of it run stoat ssh out1 -- <cmd>/m
      )
    }
  })

  it("--json through a pipe is one valid result line however big, even for a failing command", async () => {
    const run = await pipeline(`stoat --json exec ${VM} -- sh -c 'head -c 5000000 /dev/urandom; exit 3' | cat`)
    const data = result(run.stdout.toString())["data"]
    expect(data).toMatchObject({ exit_code: 3, truncated: true })
    expect(Buffer.from(data.stdout_base64, "base64").length).toBe(MiB)
  })

  it("file write over 16 MiB is refused while reading stdin: a short error naming the cap, exit 2, nothing written", async () => {
    const text = await feed(["file", "write", VM, "/tmp/over"], 17 * MiB)
    expect(text.code).toBe(2)
    expect(text.stderr).toBe(
      "stoat: file: stdin holds more than 16777216 bytes (16 MiB), the cap of one file write; copy bigger files with stoat cp <file> <vm>:<path>\n"
    )
    // 200 MB: stoat stops reading a little past the cap instead of buffering it all (it ended in "Invalid string length").
    const json = await feed(["--json", "file", "write", VM, "/tmp/over"], 200 * MiB)
    expect(json.taken).toBeLessThan(64 * MiB)
    expect(json.code).toBe(2)
    expect(json.stdout.length).toBeLessThan(400)
    expect(result(json.stdout)["error"]).toMatchObject({ code: "usage", subject: "/tmp/over" })
    expect((await stoat(["--json", "file", "stat", VM, "/tmp/over"], env)).stdout).toMatch(/"code":"not_found"/)
    // Exactly the cap is written.
    const exact = await feed(["--json", "file", "write", VM, "/tmp/exact"], 16 * MiB)
    expect(result(exact.stdout)["data"]).toEqual({ path: "/tmp/exact", bytes: 16 * MiB, mode: "0644" })
    const help = await stoat(["file", "write", "--help"], env)
    expect(help.stdout.replace(/\s+/g, " ")).toMatch(
      /At most 16 MiB per write \(more is refused before it is read in\)/
    )
  })

  it("file write to a folder says it is a directory; file read of an endless device claims no size", async () => {
    const folder = await stoat(["file", "write", VM, "/tmp", "--content", "x"], env)
    expect(folder).toMatchObject({
      code: 2,
      stderr: "stoat: file: /tmp is a directory (VM out1); write to a file path inside it\n"
    })
    const zero = await pipeline(`stoat file read ${VM} /dev/zero | wc -c`)
    expect(zero.stdout.toString()).toBe(`${MiB}\n`)
    expect(zero.stderr).toBe(
      `stoat: file: printed ${MiB} bytes of /dev/zero; more follows; read on with --offset ${MiB}\n`
    )
  })

  it("snapshot ls and rm take the VM like checkpoint ls and rm do", async () => {
    expect(result((await stoat(["--json", "snapshot", VM, "s1"], env)).stdout)["ok"]).toBe(true)
    const listed = result((await stoat(["--json", "snapshot", "ls", VM], env)).stdout)["data"]
    expect(listed.snapshots.map((snapshot: { tag: string }) => snapshot.tag)).toEqual(["s1"])
    const removed = await stoat(["snapshot", "rm", VM, "s1"], env)
    expect(removed).toMatchObject({ code: 0, stdout: `deleted snapshot s1 of ${VM}\n` })
    expect((await stoat(["snapshot", "ls", VM], env)).stdout).toBe(`${VM}: no snapshots\n`)
  })

  it("what pull tiny reports is what images lists", async () => {
    const pulled = result((await stoat(["--json", "pull", "tiny"], env)).stdout)
    expect(pulled["data"]).toMatchObject({ id: "tiny", downloaded: true })
    const images = result((await stoat(["--json", "images"], env)).stdout)["data"]["images"]
    expect(images.find((image: { id: string }) => image.id === "tiny")).toMatchObject({
      downloaded: true,
      bytes_exact: true
    })
  })
})
