/**
 * Ook! ↔ Brainfuck. Ook! spells each Brainfuck command as a pair of tokens (reference A4):
 *
 *   Ook. Ook? >   Ook? Ook. <   Ook. Ook. +   Ook! Ook! -
 *   Ook! Ook. .   Ook. Ook! ,   Ook! Ook? [   Ook? Ook! ]
 *
 * Tokens are found anywhere in the text, with or without whitespace between them (pbtk only
 * splits on space, tab and newlines, so "Ook.Ook?" was one unusable word there). Tokens are
 * paired in order; a pair that is not a command (e.g. `Ook? Ook?`) is dropped, as in pbtk.
 */
import { BrainfuckSyntaxError, compileBrainfuck, type Program } from "./brainfuck.js"

const PAIRS: Readonly<Record<string, string>> = {
  ".?": ">",
  "?.": "<",
  "..": "+",
  "!!": "-",
  "!.": ".",
  ".!": ",",
  "!?": "[",
  "?!": "]"
}

const TO_OOK: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(PAIRS).map(([pair, bf]) => [bf, `Ook${pair[0]} Ook${pair[1]}`])
)

/** "Ook" followed by its punctuation, not preceded by a letter or digit (so "Book." is not a token). */
const TOKEN = /(?<![A-Za-z0-9])Ook([.?!])/g

export interface OokTranslation {
  /** The Brainfuck program. */
  readonly brainfuck: string
  /** For each Brainfuck command, the UTF-16 offset in the Ook source of its first token. */
  readonly offsets: readonly number[]
}

/** Translate Ook! to Brainfuck, keeping where each command came from. */
export function translateOok(source: string): OokTranslation {
  let bf = ""
  const offsets: number[] = []
  let first: { mark: string; at: number } | null = null
  for (const m of source.matchAll(TOKEN)) {
    const mark = m[1] ?? ""
    const at = m.index
    if (first === null) {
      first = { mark, at }
      continue
    }
    const cmd = PAIRS[first.mark + mark]
    if (cmd !== undefined) {
      bf += cmd
      offsets.push(first.at)
    }
    first = null
  }
  return { brainfuck: bf, offsets }
}

export function ookToBrainfuck(source: string): string {
  return translateOok(source).brainfuck
}

/** Brainfuck to Ook!: one token pair per command, space-separated, comments dropped (as pbtk's `bf-to-ook`). */
export function bfToOok(source: string): string {
  const out: string[] = []
  for (const ch of source) {
    const ook = TO_OOK[ch]
    if (ook !== undefined) out.push(ook)
  }
  return out.join(" ")
}

/**
 * Translate and compile an Ook! program. Unmatched brackets are reported at their line and
 * column in the Ook! source.
 */
export function compileOok(source: string): Program {
  const { brainfuck, offsets } = translateOok(source)
  try {
    return compileBrainfuck(brainfuck)
  } catch (e) {
    if (!(e instanceof BrainfuckSyntaxError)) throw e
    const at = offsets[e.offset] ?? 0
    let line = 1
    let lineStart = 0
    for (let i = 0; i < at; i++) {
      if (source.charCodeAt(i) === 10) {
        line++
        lineStart = i + 1
      }
    }
    throw new BrainfuckSyntaxError(e.kind, at, line, at - lineStart + 1)
  }
}
