import { spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BIN, bfPrinting, freePort, HELLO_BF, tempHome, toolkit, type Home } from "./helpers.js"

/** The real binary: interpreters, strings, web, demoscene, errors and response files. */

let home: Home
beforeAll(() => {
  home = tempHome()
  home.file("hello.bf", HELLO_BF)
})
afterAll(() => home.cleanup())

describe("interpreters brainfuck", () => {
  it("runs a program file", async () => {
    expect(await toolkit(home, ["interpreters", "brainfuck", "--file", "hello.bf"])).toMatchObject({
      code: 0,
      stdout: "Hello World!\n",
      stderr: ""
    })
  })

  it("reads the program from stdin with --file -", async () => {
    expect(await toolkit(home, ["interpreters", "brainfuck", "--file", "-"], { input: HELLO_BF })).toMatchObject({
      code: 0,
      stdout: "Hello World!\n"
    })
  })

  it("',' reads the command's stdin and 0 at end of input", async () => {
    home.file("echo.bf", ",[.,]")
    expect((await toolkit(home, ["interpreters", "brainfuck", "--file", "echo.bf"], { input: "abc\n" })).stdout).toBe(
      "abc\n"
    )
    home.file("eof.bf", ",,+++++++++++++++++++++++++++++++++++++++++++++++++.") // second ',' hits EOF: 0 + 49 = "1"
    expect((await toolkit(home, ["interpreters", "brainfuck", "--file", "eof.bf"], { input: "x" })).stdout).toBe("1")
  })

  it("wraps cells at 256 and the pointer around the 30,000-cell tape", async () => {
    home.file("wrap.bf", "-.")
    expect((await toolkit(home, ["interpreters", "brainfuck", "--file", "wrap.bf"])).raw).toEqual(Buffer.from([255]))
    // Left of cell 0 is cell 29999; right of it is cell 0 again.
    home.file("ptr.bf", `<${"+".repeat(65)}.>+.<.`)
    expect((await toolkit(home, ["interpreters", "brainfuck", "--file", "ptr.bf"])).stdout).toBe("A\x01A")
    home.file("ptr2.bf", `${"+".repeat(66)}${">".repeat(30_000)}.`) // 30,000 steps right is where we started
    expect((await toolkit(home, ["interpreters", "brainfuck", "--file", "ptr2.bf"])).stdout).toBe("B")
  })

  it("reports a missing file exactly, with exit code 1", async () => {
    expect(await toolkit(home, ["interpreters", "brainfuck", "--file", "/nonexistent/x.bf"])).toMatchObject({
      code: 1,
      stdout: "Error: Brainfuck program file not found: /nonexistent/x.bf\n"
    })
  })

  it("reports unmatched brackets", async () => {
    home.file("bad.bf", "+[.")
    const run = await toolkit(home, ["interpreters", "brainfuck", "--file", "bad.bf"])
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/^Error: Brainfuck program bad\.bf: Unmatched '\[' at line 1, column 2/)
  })

  it("reports a missing required option as an Error line with exit code 1", async () => {
    expect(await toolkit(home, ["interpreters", "brainfuck"])).toMatchObject({
      code: 1,
      stdout: "Error: Missing required flag file\n"
    })
  })
})

describe("interpreters bf-to-ook and ook", () => {
  it("translates, creating the output directory, and the Ook! program runs", async () => {
    home.file("plus.bf", "+. comment")
    const run = await toolkit(home, [
      "interpreters",
      "bf-to-ook",
      "--source",
      "plus.bf",
      "--output",
      "new/dir/plus.ook"
    ])
    expect(run).toMatchObject({ code: 0, stdout: "Ook! program written to new/dir/plus.ook\n" })
    expect(readFileSync(join(home.dir, "new/dir/plus.ook"), "utf8")).toBe("Ook. Ook. Ook! Ook.")
    await toolkit(home, ["interpreters", "bf-to-ook", "--source", "hello.bf", "--output", "hello.ook"])
    expect(await toolkit(home, ["interpreters", "ook", "--file", "hello.ook"])).toMatchObject({
      code: 0,
      stdout: "Hello World!\n"
    })
  })

  it("fails for a missing source", async () => {
    expect(
      await toolkit(home, ["interpreters", "bf-to-ook", "--source", "nope.bf", "--output", "x.ook"])
    ).toMatchObject({
      code: 1,
      stdout: "Error: Brainfuck source file not found: nope.bf\n"
    })
    expect(existsSync(join(home.dir, "x.ook"))).toBe(false)
  })
})

describe("strings", () => {
  it("reverse writes the reversed text, by grapheme unless told otherwise", async () => {
    home.file("in.txt", "ab👍🏽c")
    expect((await toolkit(home, ["strings", "reverse", "--in-file", "in.txt", "--out-file", "out.txt"])).stdout).toBe(
      "Reversed text written to out.txt\n"
    )
    expect(readFileSync(join(home.dir, "out.txt"), "utf8")).toBe("c👍🏽ba")
    await toolkit(home, ["strings", "reverse", "--in-file", "in.txt", "--out-file", "cp.txt", "--unit", "code-point"])
    expect(readFileSync(join(home.dir, "cp.txt"), "utf8")).toBe("c🏽👍ba")
    expect(
      (await toolkit(home, ["strings", "reverse", "--in-file", "in.txt", "--out-file", "x.txt", "--unit", "word"])).code
    ).toBe(1)
  })

  it("levenshtein-distance reads a value as a file when one exists, else as text; --ignore-case", async () => {
    home.file("a.txt", "kitten")
    expect(
      (await toolkit(home, ["strings", "levenshtein-distance", "--string1", "a.txt", "--string2", "sitting"])).stdout
    ).toBe("Levenshtein distance: 3\n")
    expect(
      (
        await toolkit(home, [
          "strings",
          "levenshtein-distance",
          "--string1",
          "ABC",
          "--string2",
          "abc",
          "--ignore-case"
        ])
      ).stdout
    ).toBe("Levenshtein distance: 0\n")
    expect(
      (
        await toolkit(home, [
          "strings",
          "levenshtein-distance",
          "--string1",
          "ABC",
          "--string2",
          "abc",
          "--ignore-case",
          "false"
        ])
      ).stdout
    ).toBe("Levenshtein distance: 3\n")
    expect(
      (
        await toolkit(home, [
          "strings",
          "levenshtein-distance",
          "--string1",
          "A",
          "--string2",
          "a",
          "--ignore-case",
          "maybe"
        ])
      ).code
    ).toBe(1)
  })

  it("abjadify keeps the words a and I", async () => {
    home.file("abj.in", "I am a cat, Anna. Education!")
    await toolkit(home, ["strings", "abjadify", "--in-file", "abj.in", "--out-file", "abj.out"])
    expect(readFileSync(join(home.dir, "abj.out"), "utf8")).toBe("I m a ct, nn. dctn!")
  })

  it("flesch-reading-ease prints score, band and counts", async () => {
    home.file("easy.txt", "The cat sat. The dog ran.")
    const run = await toolkit(home, ["strings", "flesch-reading-ease", "--in-file", "easy.txt"])
    expect(run.stdout).toMatch(
      /^Flesch Reading Ease: +100\.00\nReadability: +Very easy\nSentences: +2\nWords: +6\nSyllables: +6\n$/
    )
  })

  it("report takes exactly one of --in-file and --string", async () => {
    const run = await toolkit(home, ["strings", "report", "--string", "One fish. Two fish!"])
    expect(run.stdout).toMatch(/^Words: +4$/m)
    expect(run.stdout).toMatch(/^Most common word: +fish$/m)
    expect(await toolkit(home, ["strings", "report"])).toMatchObject({
      code: 1,
      stdout: "Error: give exactly one of --in-file and --string\n"
    })
    expect((await toolkit(home, ["strings", "report", "--string", "x", "--in-file", "a.txt"])).code).toBe(1)
  })
})

describe("command line", () => {
  it("expands @response files (the tool-call path never does)", async () => {
    home.file("args.rsp", '# options for report\n--string "one two three"\n--words-per-minute 60\n')
    const run = await toolkit(home, ["strings", "report", "@args.rsp"])
    expect(run.stdout).toMatch(/^Words: +3$/m)
    expect(run.stdout).toMatch(/^Est\. reading time: +3s$/m)
    expect(await toolkit(home, ["strings", "report", "@missing.rsp"])).toMatchObject({
      code: 1,
      stdout: "Error: Response file not found 'missing.rsp'\n"
    })
  })

  it("reports unknown commands and prints help for topics", async () => {
    expect(await toolkit(home, ["nope"])).toMatchObject({ code: 1 })
    expect((await toolkit(home, ["nope"])).stdout).toMatch(/^Error: unknown command 'nope'/)
    expect((await toolkit(home, ["interpreters"])).stdout).toContain("interpreters brainfuck")
    expect((await toolkit(home, ["--version"])).stdout).toMatch(/^toolkit \d+\.\d+\.\d+\n$/)
  })
})

describe("web serve-html", () => {
  it("serves the file at / and its siblings, nothing outside, until stopped", async () => {
    home.file("site/index.html", "<h1>hi</h1>")
    home.file("site/style.css", "h1{}")
    home.file("secret.txt", "outside")
    const port = await freePort()
    const child = spawn(
      process.execPath,
      [BIN, "web", "serve-html", "--file", "site/index.html", "--port", String(port)],
      { cwd: home.dir, env: home.env }
    )
    let out = ""
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString()
        if (out.includes("\n")) resolve()
      })
      child.on("exit", (code) => reject(new Error(`exited ${code}: ${out}`)))
    })
    expect(out).toContain(`http://localhost:${port}/`)
    const root = await fetch(`http://127.0.0.1:${port}/`)
    expect(root.headers.get("content-type")).toMatch(/^text\/html/)
    expect(await root.text()).toBe("<h1>hi</h1>")
    const css = await fetch(`http://127.0.0.1:${port}/style.css`)
    expect([css.status, css.headers.get("content-type"), await css.text()]).toEqual([
      200,
      "text/css; charset=utf-8",
      "h1{}"
    ])
    expect((await fetch(`http://127.0.0.1:${port}/..%2fsecret.txt`)).status).toBe(404)
    expect((await fetch(`http://127.0.0.1:${port}/nope.html`)).status).toBe(404)
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve))
    child.kill("SIGINT")
    expect(await exited).toBe(0)
  })

  it("fails for a missing file", async () => {
    expect(await toolkit(home, ["web", "serve-html", "--file", "none.html", "--port", "0"])).toMatchObject({
      code: 1,
      stdout: "Error: HTML file not found: none.html\n"
    })
  })
})

describe("demoscene", () => {
  it("refuses cleanly without a terminal", async () => {
    for (const effect of ["plasma", "fire", "copper"]) {
      expect(await toolkit(home, ["demoscene", effect, "--frames", "2"])).toMatchObject({
        code: 1,
        stdout: `Error: demoscene ${effect} needs a terminal, but standard output is not a TTY\n`
      })
    }
  })

  it.skipIf(spawnSync("script", ["--version"]).status !== 0)(
    "plays frames on a pseudo-terminal and restores it",
    () => {
      const run = spawnSync(
        "script",
        ["-qec", `stty cols 40 rows 12; ${process.execPath} ${BIN} demoscene fire --frames 3`, "/dev/null"],
        { cwd: home.dir, env: home.env, encoding: "utf8" }
      )
      expect(run.status).toBe(0)
      expect(run.stdout).toContain("\u2580")
      expect(run.stdout).toContain("\x1b[38;2;")
      expect(run.stdout).toContain("\x1b[?25h") // cursor shown again
    }
  )
})

describe("brainfuck helper", () => {
  it("bfPrinting makes programs that print their text", async () => {
    home.file("p.bf", bfPrinting("xyz\n"))
    expect((await toolkit(home, ["interpreters", "brainfuck", "--file", "p.bf"])).stdout).toBe("xyz\n")
  })
})
