import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { BrainfuckSyntaxError, runProgram, runToBuffer } from "../../src/engine/brainfuck.js"
import { bfToOok, compileOok, ookToBrainfuck, translateOok } from "../../src/engine/ook.js"

const HELLO =
  "++++++++[>++++[>++>+++>+++>+<<<<-]>+>+>->>+[<]<-]>>.>---.+++++++..+++.>>.<-.<.+++.------.--------.>>+.>++."

describe("Ook!", () => {
  it("maps every command both ways", () => {
    expect(bfToOok("><+-.,[]")).toBe("Ook. Ook? Ook? Ook. Ook. Ook. Ook! Ook! Ook! Ook. Ook. Ook! Ook! Ook? Ook? Ook!")
    expect(ookToBrainfuck(bfToOok("><+-.,[]"))).toBe("><+-.,[]")
  })

  it("drops comments when translating to Ook!", () => {
    expect(bfToOok("add one: + then print .\n")).toBe("Ook. Ook. Ook! Ook.")
    expect(bfToOok("no commands")).toBe("")
  })

  it("round-trips any program's commands", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("+", "-", "<", ">", ".", ",", "[", "]", " ", "x", "\n") }),
        (src) => {
          expect(ookToBrainfuck(bfToOok(src))).toBe(src.replace(/[^+\-<>.,[\]]/g, ""))
        }
      )
    )
  })

  it("tokenizes across newlines, tabs, missing spaces and surrounding text", () => {
    expect(ookToBrainfuck("Ook.\nOok?\tOok.Ook.   Ook!\r\nOok!")).toBe(">+-")
    expect(ookToBrainfuck("The orangutan says: Ook. Ook. (and then) Ook! Ook.")).toBe("+.")
    // "Book." is not a token
    expect(ookToBrainfuck("Book. Ook. Ook.")).toBe("+")
  })

  it("drops pairs that are not commands and a trailing single token", () => {
    expect(ookToBrainfuck("Ook? Ook? Ook. Ook. Ook!")).toBe("+")
    expect(ookToBrainfuck("")).toBe("")
  })

  it("runs hello world written in Ook!", () => {
    const ook = bfToOok(HELLO)
    const chunks: Uint8Array[] = []
    runProgram(compileOok(ook), { write: (c) => chunks.push(c) })
    expect(Buffer.concat(chunks).toString()).toBe("Hello World!\n")
    expect(Buffer.from(runToBuffer(ookToBrainfuck(ook))).toString()).toBe("Hello World!\n")
  })

  it("reports unmatched brackets at their place in the Ook! source", () => {
    const src = "Ook. Ook.\nOook Ook! Ook?"
    expect(translateOok(src).offsets).toEqual([0, 15])
    try {
      compileOok(src)
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(BrainfuckSyntaxError)
      expect((e as BrainfuckSyntaxError).line).toBe(2)
      expect((e as BrainfuckSyntaxError).column).toBe(6)
    }
  })
})
