import { existsSync, readFileSync } from "node:fs"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  BrainfuckStoppedError,
  BrainfuckSyntaxError,
  compileBrainfuck,
  MAX_NESTING,
  runProgram,
  runToBuffer,
  TAPE_SIZE
} from "../../src/engine/brainfuck.js"
import { referenceRun } from "./reference-interpreter.js"

const HELLO =
  "++++++++[>++++[>++>+++>+++>+<<<<-]>+>+>->>+[<]<-]>>.>---.+++++++..+++.>>.<-.<.+++.------.--------.>>+.>++."

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString("latin1")
const bytes = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s, "latin1"))

/** Run in this thread and return output, final tape and pointer. */
function exec(
  source: string,
  input: Uint8Array = new Uint8Array(0)
): { out: Uint8Array; tape: Uint8Array; pointer: number } {
  const chunks: Uint8Array[] = []
  let tape = new Uint8Array(0)
  let pointer = -1
  runProgram(compileBrainfuck(source), {
    input,
    write: (c) => chunks.push(c),
    onExit: (t, p) => {
      tape = t.slice()
      pointer = p
    }
  })
  return { out: Buffer.concat(chunks), tape, pointer }
}

describe("brainfuck semantics", () => {
  it("prints hello world", () => {
    expect(text(runToBuffer(HELLO))).toBe("Hello World!\n")
  })

  it("ignores comments and empty programs", () => {
    expect(text(runToBuffer("this is a comment with no commands"))).toBe("")
    expect(text(runToBuffer(""))).toBe("")
  })

  it("wraps cells: 0 - 1 = 255 and 255 + 1 = 0", () => {
    expect([...runToBuffer("-.")]).toEqual([255])
    expect([...runToBuffer("-+.")]).toEqual([0])
    expect([...runToBuffer("-" + "+".repeat(258) + ".")]).toEqual([1])
    expect([...runToBuffer("+".repeat(300) + ".")]).toEqual([44])
  })

  it("wraps the pointer at the left end", () => {
    const r = exec("<+++.")
    expect([...r.out]).toEqual([3])
    expect(r.pointer).toBe(TAPE_SIZE - 1)
    expect(r.tape[TAPE_SIZE - 1]).toBe(3)
  })

  it("wraps the pointer at the right end", () => {
    // 30,000 moves right return to cell 0.
    const r = exec("++" + ">".repeat(TAPE_SIZE) + ".")
    expect([...r.out]).toEqual([2])
    expect(r.pointer).toBe(0)
    const r2 = exec("<<+>>+>+<<<<.")
    expect(r2.tape[TAPE_SIZE - 2]).toBe(1)
    expect(r2.tape[0]).toBe(1)
    expect(r2.tape[1]).toBe(1)
    expect(r2.pointer).toBe(TAPE_SIZE - 3)
  })

  it("handles offset accesses that straddle the tape end (wrap-around slow path)", () => {
    // Inside a loop body whose cells span the end of the tape.
    const r = exec("<<+++[>>>+++<<<-]>>>.")
    expect([...r.out]).toEqual([9])
    expect(r.tape[TAPE_SIZE - 2]).toBe(0)
    expect(r.tape[1]).toBe(9)
    // A stride loop that walks off the right end and continues from cell 0.
    const r2 = exec("+<<<<+<<<<+" + "[>>>>]" + "+.")
    expect(r2.pointer).toBe(4)
    expect([...r2.out]).toEqual([1])
  })

  it("reads input bytes and stores 0 at end of input", () => {
    expect(text(exec(",.,.,.", bytes("ab")).out)).toBe("ab\0")
    expect([...exec("+,.").out]).toEqual([0])
    // cat until end of input
    expect(text(exec(",[.,]", bytes("stream of bytes")).out)).toBe("stream of bytes")
  })

  it("overwrites pending writes on input", () => {
    expect([...exec("+++,.", Uint8Array.of(7)).out]).toEqual([7])
  })

  it("runs nested loops", () => {
    // 4 * 4 * 4 = 64 increments of cell 3, then print '@' (64).
    expect(text(runToBuffer("++++[>++++[>++++[>+<-]<-]<-]>>>."))).toBe("@")
    // Non-multiply nested loop with output inside.
    expect(text(runToBuffer("+++[>++[>+++++++++++++++++++++++++++++++++.<-]<-]"))).toBe("!Bc\u0084\u00a5\u00c6")
  })

  it("runs multiply and copy loops", () => {
    // copy: c1 = c2 = c0
    const r = exec("+++++[>+>+<<-]")
    expect([r.tape[0], r.tape[1], r.tape[2]]).toEqual([0, 5, 5])
    // multiply with factors, negative factors, and a +1 origin step (runs 256 - n times)
    const r2 = exec("+++[>+++>-<<-]")
    expect([r2.tape[0], r2.tape[1], r2.tape[2]]).toEqual([0, 9, 253])
    const r3 = exec("-------[>+<+]")
    expect([r3.tape[0], r3.tape[1]]).toEqual([0, 7])
    // an odd step of 3: 3 * 171 = 513 ≡ 1 (mod 256), so 1 needs 171 iterations of -3
    const r4 = exec("+[>+<---]")
    expect([r4.tape[0], r4.tape[1]]).toEqual([0, 171])
    // clear loops
    expect([...exec("+++++[-].").out]).toEqual([0])
    expect([...exec("+++++[+].").out]).toEqual([0])
    // a loop that is never entered
    expect([...exec("[>+++<-]>.").out]).toEqual([0])
  })

  it("runs scan loops, wrapping around the tape", () => {
    const r = exec("+>+>+>+<<<[>]")
    expect(r.pointer).toBe(4)
    const r2 = exec(">>>>+<+<+<+[<]")
    expect(r2.pointer).toBe(0)
    // leftward scan from cell 0 wraps to the end of the tape, where cell 29999 is zero
    const r3 = exec("+[<]")
    expect(r3.pointer).toBe(TAPE_SIZE - 1)
    // stride scans
    const r4 = exec("+>>>+>>>+>>>+<<<<<<<<<[>>>]")
    expect(r4.pointer).toBe(12)
    const r5 = exec("+>>+>>+<<<<[>>]")
    expect(r5.pointer).toBe(6)
    const r6 = exec("+<<+<<+[<<]")
    expect(r6.pointer).toBe(TAPE_SIZE - 6)
  })

  it("matches a reference interpreter on the classic corner cases", () => {
    const programs = [
      ",[>,]<[.<]",
      ">+>++>+++<<[>]<[[->+<]<]>>>.",
      "++++[>++++<-]>[<<+>>-]<<.",
      "+[-->-[>>+>-----<<]<--<---]>-.>>>+.>>..+++[.>]<<<<.+++.------.<<-.>>>>+.",
      "--->--->->->--->->--->->->->->--->->--->+>>>>>>>>>>>>>>>>>+[<]>."
    ]
    for (const src of programs) {
      const ref = referenceRun(src, bytes("2\n"), 5_000_000)
      expect(ref.finished).toBe(true)
      const got = exec(src, bytes("2\n"))
      expect(text(got.out)).toBe(text(ref.output))
      expect(got.pointer).toBe(ref.pointer)
      expect(Buffer.from(got.tape).equals(Buffer.from(ref.tape))).toBe(true)
    }
  })
})

describe("brainfuck syntax errors", () => {
  it("reports an unmatched '[' with its position", () => {
    const e = (() => {
      try {
        compileBrainfuck("+\n++[>+\n[-]")
      } catch (err) {
        return err
      }
      return null
    })()
    expect(e).toBeInstanceOf(BrainfuckSyntaxError)
    const se = e as BrainfuckSyntaxError
    expect(se.kind).toBe("unmatched-open")
    expect([se.line, se.column, se.offset]).toEqual([2, 3, 4])
    expect(se.message).toBe("Unmatched '[' at line 2, column 3: it has no closing ']'")
  })

  it("reports an unmatched ']' with its position", () => {
    expect(() => compileBrainfuck("+[-]]")).toThrowError("Unmatched ']' at line 1, column 5: it has no opening '['")
    expect(() => compileBrainfuck("]")).toThrowError(BrainfuckSyntaxError)
  })

  it("rejects nesting deeper than the limit but accepts deep nesting below it", () => {
    expect(() => compileBrainfuck("[".repeat(MAX_NESTING + 1) + "]".repeat(MAX_NESTING + 1))).toThrowError(
      /nested more than/
    )
    const balanced = "+" + "[".repeat(MAX_NESTING) + "-" + "]".repeat(MAX_NESTING) + "."
    expect([...runToBuffer(balanced)]).toEqual([0])
    const moving = "+" + "[>".repeat(MAX_NESTING) + "]".repeat(MAX_NESTING) + "."
    expect([...runToBuffer(moving)]).toEqual([0])
  })
})

describe("stopping in-thread runs", () => {
  it("stops an endless loop when shouldStop says so", () => {
    let polls = 0
    expect(() => runProgram(compileBrainfuck("+[]"), { write: () => {}, shouldStop: () => ++polls > 3 })).toThrowError(
      BrainfuckStoppedError
    )
    expect(polls).toBe(4)
  })

  it("stops endless scans over a tape with no zero cell", () => {
    const full = "->".repeat(TAPE_SIZE) // every cell 255, pointer back at 0
    for (const scan of ["[>]", "[<]", "[>>>]"]) {
      let polls = 0
      expect(() =>
        runProgram(compileBrainfuck(full + scan), { write: () => {}, shouldStop: () => ++polls > 3 })
      ).toThrowError(BrainfuckStoppedError)
    }
  })
})

/** Random programs: balanced brackets, loops biased towards the shapes the optimizer rewrites. */
const program: fc.Arbitrary<string> = fc.letrec<{ prog: string; loop: string; item: string }>((tie) => ({
  item: fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom("+", "-", ">", "<", "++", "--", ">>", "<<", ">>>", "<<<", "+++++", ".", ",")
    },
    { weight: 1, arbitrary: tie("loop") }
  ),
  loop: fc.oneof(
    // clear / multiply / scan shapes
    fc.constantFrom(
      "[-]",
      "[+]",
      "[>]",
      "[<]",
      "[>>>]",
      "[<<]",
      "[->+<]",
      "[->>++<<]",
      "[-<+>>---<]",
      "[+>-<]",
      "[>+<---]"
    ),
    // generic loops that usually terminate: decrement the loop cell first
    fc.tuple(fc.constantFrom("-", "--", "+"), tie("prog")).map(([d, body]) => `[${d}${body}]`),
    tie("prog").map((body) => `[${body}]`)
  ),
  prog: fc.array(tie("item"), { maxLength: 8 }).map((items) => items.join(""))
})).prog

describe("differential fuzzing against the reference interpreter", () => {
  it("agrees on output, tape and pointer for random terminating programs", () => {
    let compared = 0
    fc.assert(
      fc.property(
        program,
        fc.uint8Array({ maxLength: 8 }),
        // Start at a random spot, often close to the tape ends, to exercise wrapping.
        fc.oneof(
          fc.constant(""),
          fc.constant("<<<<"),
          fc.integer({ min: 1, max: 12 }).map((n) => "<".repeat(n))
        ),
        (prog, input, prefix) => {
          const src = prefix + prog
          const ref = referenceRun(src, input, 20_000)
          if (!ref.finished) return
          compared++
          const deadline = Date.now() + 2000
          const chunks: Uint8Array[] = []
          let tape = new Uint8Array(0)
          let pointer = -1
          runProgram(compileBrainfuck(src), {
            input,
            write: (c) => chunks.push(c),
            shouldStop: () => Date.now() > deadline,
            onExit: (t, p) => {
              tape = t.slice()
              pointer = p
            }
          })
          expect([...Buffer.concat(chunks)]).toEqual([...ref.output])
          expect(pointer).toBe(ref.pointer)
          expect(Buffer.from(tape).equals(Buffer.from(ref.tape))).toBe(true)
        }
      ),
      { numRuns: Number(process.env["BF_FUZZ_RUNS"] ?? 1500) }
    )
    expect(compared).toBeGreaterThan(500)
  })
})

/** The shared benchmark corpus (data, not in the repo): $STOAT_SHARED or ../shared from the repo root. */
function sharedBench(): string | null {
  const here = dirname(fileURLToPath(import.meta.url))
  const root = resolve(here, "../../../..")
  const base = process.env["STOAT_SHARED"] ?? join(root, "../shared")
  const dir = join(base, "bench/brainfuck")
  return existsSync(join(dir, "long.b")) ? dir : null
}

const benchDir = sharedBench()

describe.skipIf(benchDir === null)(
  `golden programs from the shared corpus (${benchDir ?? "not found: set STOAT_SHARED"})`,
  () => {
    for (const name of ["long.b", "factor.b", "hanoi.b", "mandelbrot.b"]) {
      it(`${name} produces the expected output`, () => {
        const dir = benchDir ?? ""
        const src = readFileSync(join(dir, name), "utf8")
        const inPath = join(dir, `${name}.in`)
        const input = existsSync(inPath) ? readFileSync(inPath) : new Uint8Array(0)
        const expected = readFileSync(join(dir, `${name}.out`))
        const out = Buffer.from(exec(src, input).out)
        expect(out.equals(expected)).toBe(true)
      })
    }
  }
)
