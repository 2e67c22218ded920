import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  abjadify,
  countSyllables,
  fleschReadingEase,
  formatFlesch,
  formatLevenshtein,
  formatReadingTime,
  formatStringReport,
  levenshteinDistance,
  LevenshteinLimitError,
  reverseText,
  roundHalfEven,
  stringReport
} from "../../src/engine/strings.js"

describe("reverse", () => {
  it("reverses by grapheme cluster by default", () => {
    expect(reverseText("abc")).toBe("cba")
    expect(reverseText("a👍🏽b")).toBe("b👍🏽a")
    expect(reverseText("e\u0301x")).toBe("xe\u0301")
    expect(reverseText("line1\r\nline2")).toBe("2enil\r\n1enil")
    expect(reverseText("")).toBe("")
  })

  it("can reverse by code point or by UTF-16 unit", () => {
    expect(reverseText("a👍b", "code-point")).toBe("b👍a")
    expect(reverseText("ab\u00e9", "code-unit")).toBe("\u00e9ba")
  })

  it("keeps every code point", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (s) => {
        expect(reverseText(reverseText(s, "code-point"), "code-point")).toBe(s)
        expect([...reverseText(s)].sort()).toEqual([...s].sort())
      })
    )
  })
})

/** The clusters of the whole text in one segmenter pass: what reverseText must match. */
const wholeTextReverse = (text: string): string =>
  Array.from(new Intl.Segmenter(undefined, { granularity: "grapheme" }).segment(text), (s) => s.segment)
    .reverse()
    .join("")

describe("reverse: long texts", () => {
  // Pieces whose clusters span several code units, so window edges land inside clusters.
  const piece = fc.constantFrom(
    "a",
    "b ",
    "\r\n",
    "\n",
    "e\u0301",
    "\u0915\u094d\u0937",
    "👍🏽",
    "👨‍👩‍👧",
    "🇫🇷",
    "🇩🇪🇫🇷",
    "\u1100\u1161\u11a8",
    "漢",
    "\u0600a",
    "é"
  )

  it("clusters like one pass of Intl.Segmenter over the whole text, across window edges", () => {
    fc.assert(
      fc.property(fc.array(piece, { minLength: 100, maxLength: 600 }), (pieces) => {
        const text = pieces.join("")
        expect(reverseText(text)).toBe(wholeTextReverse(text))
      }),
      { numRuns: 40 }
    )
  })

  it("stays linear: a 1 MiB text reverses (one whole-text iterator took minutes on 256 KiB)", () => {
    const line = "Plain words, and some ae\u0301 👍🏽 漢字 too.\r\n"
    expect(reverseText(line.repeat(25_000))).toBe(wholeTextReverse(line).repeat(25_000))
  })
})

describe("levenshtein-distance", () => {
  it("refuses work beyond maxPairs, before doing any", () => {
    expect(() => levenshteinDistance("x".repeat(1001), "y".repeat(1000), 1_000_000)).toThrow(LevenshteinLimitError)
    expect(() => levenshteinDistance("x".repeat(1001), "y".repeat(1000), 1_000_000)).toThrow(
      "1001 × 1000 characters is more than the 1,000,000 character pairs compared at most"
    )
    expect(levenshteinDistance("x".repeat(1000), "y".repeat(1000), 1_000_000)).toBe(1000)
    // One empty string is linear work whatever the other's length.
    expect(levenshteinDistance("x".repeat(100_000), "", 1)).toBe(100_000)
  })

  it("computes classic distances", () => {
    expect(levenshteinDistance("kitten", "sitting")).toBe(3)
    expect(levenshteinDistance("flaw", "lawn")).toBe(2)
    expect(levenshteinDistance("", "abc")).toBe(3)
    expect(levenshteinDistance("abc", "")).toBe(3)
    expect(levenshteinDistance("same", "same")).toBe(0)
    expect(levenshteinDistance("Case", "case")).toBe(1)
  })

  it("counts code points, not UTF-16 units", () => {
    expect(levenshteinDistance("👍", "👎")).toBe(1)
    expect(levenshteinDistance("a😀", "a")).toBe(1)
  })

  it("is a metric", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 12 }),
        fc.string({ maxLength: 12 }),
        fc.string({ maxLength: 12 }),
        (a, b, c) => {
          const ab = levenshteinDistance(a, b)
          expect(ab).toBe(levenshteinDistance(b, a))
          expect(ab === 0).toBe(a === b)
          expect(levenshteinDistance(a, c)).toBeLessThanOrEqual(ab + levenshteinDistance(b, c))
        }
      )
    )
  })

  it("formats like pbtk", () => {
    expect(formatLevenshtein(3)).toBe("Levenshtein distance: 3")
  })
})

describe("abjadify", () => {
  it.each([
    ["hello", "hll"],
    ["a big apple and i", "a bg ppl nd i"],
    ["A I a i", "A I a i"],
    ["Hello, world! How are you?", "Hll, wrld! Hw r y?"],
    ["  hello   world  ", "  hll   wrld  "],
    ["Test123 @#$ email@example.com", "Tst123 @#$ ml@xmpl.cm"],
    ["The quick brown fox can't jump over a lazy dog's fence!", "Th qck brwn fx cn't jmp vr a lzy dg's fnc!"],
    ["state-of-the-art", "stt-f-th-rt"],
    ["3rd _under", "3rd _under"],
    ["queue AEIOU", "q "],
    ["café über", "cfé übr"],
    ["", ""]
  ])("%j → %j", (input, expected) => {
    expect(abjadify(input)).toBe(expected)
  })
})

describe("flesch-reading-ease", () => {
  it("counts syllables by vowel groups with a silent final e", () => {
    expect(countSyllables("the")).toBe(1)
    expect(countSyllables("make")).toBe(1)
    expect(countSyllables("table")).toBe(2)
    expect(countSyllables("beautiful")).toBe(3)
    expect(countSyllables("rhythm")).toBe(1)
    expect(countSyllables("paragraph")).toBe(3)
    expect(countSyllables("don't")).toBe(1)
    expect(countSyllables("Antidisestablishmentarianism")).toBe(10)
  })

  it("scores, clamps and bands", () => {
    expect(fleschReadingEase("The cat sat on the mat.")).toEqual({
      score: 100,
      band: "Very easy",
      sentences: 1,
      words: 6,
      syllables: 6
    })
    expect(fleschReadingEase("Antidisestablishmentarianism.")).toEqual({
      score: 0,
      band: "Very confusing",
      sentences: 1,
      words: 1,
      syllables: 10
    })
    const r = fleschReadingEase("The quick brown fox jumps. The lazy dog sleeps!\n\nA new paragraph here.")
    expect(r).toEqual({ score: 98.31, band: "Very easy", sentences: 3, words: 13, syllables: 16 })
  })

  it("treats text without sentence punctuation as one sentence", () => {
    expect(fleschReadingEase("Simple text without punctuation").sentences).toBe(1)
    expect(fleschReadingEase("One. Two? Three!").sentences).toBe(3)
    expect(fleschReadingEase("Wait... what?!").sentences).toBe(2)
  })

  it("reports N/A for blank text or text without words", () => {
    const empty = { score: 0, band: "N/A (empty input)", sentences: 0, words: 0, syllables: 0 }
    expect(fleschReadingEase("")).toEqual(empty)
    expect(fleschReadingEase("   \n\t  ")).toEqual(empty)
    expect(fleschReadingEase("123 456.")).toEqual(empty)
  })

  it("formats the result", () => {
    expect(formatFlesch(fleschReadingEase("The cat sat on the mat."))).toBe(
      [
        "Flesch Reading Ease:     100.00",
        "Readability:          Very easy",
        "Sentences:                    1",
        "Words:                        6",
        "Syllables:                    6"
      ].join("\n")
    )
  })
})

describe("report", () => {
  const TEXT = "The quick brown fox jumps. The lazy dog sleeps!\n\nA new paragraph here."

  it("analyzes text", () => {
    expect(stringReport(TEXT)).toEqual({
      characters: 70,
      charactersNoSpaces: 57,
      words: 13,
      uniqueWords: 12,
      sentences: 3,
      paragraphs: 2,
      averageWordsPerSentence: 4.3,
      averageSentencesPerParagraph: 1.5,
      estimatedPages: 1,
      estimatedReadingTimeSeconds: 4,
      fleschReadingEase: 98.31,
      readabilityBand: "Very easy",
      longestWord: "paragraph",
      mostCommonWord: "the"
    })
  })

  it("breaks ties for the most common word alphabetically and keeps the first longest word", () => {
    const r = stringReport("zeta alpha zeta alpha gamma delta")
    expect(r.mostCommonWord).toBe("alpha")
    expect(r.longestWord).toBe("alpha")
  })

  it("counts blank lines with whitespace as paragraph breaks", () => {
    expect(stringReport("One.\n \t\nTwo.\n\n\nThree.").paragraphs).toBe(3)
  })

  it("uses .NET's whitespace set", () => {
    // U+0085 is whitespace in .NET (not in JS \\s); U+FEFF is not (but is in JS \\s).
    expect(stringReport("a\u0085b\ufeff").charactersNoSpaces).toBe(3)
  })

  it("returns zeros for blank input", () => {
    const r = stringReport(" \n ")
    expect(r.words).toBe(0)
    expect(r.characters).toBe(0)
    expect(r.readabilityBand).toBe("N/A (empty input)")
  })

  it("formats the report", () => {
    const out = formatStringReport(stringReport(TEXT)).split("\n")
    expect(out[0]).toBe("Text Analysis Report")
    expect(out).toContain("Avg words per sentence:             4.3")
    expect(out).toContain("Est. reading time:                   4s")
    expect(out).toContain("Most common word:                   the")
    expect(out).toHaveLength(15)
  })

  it("formats reading time", () => {
    expect(formatReadingTime(45)).toBe("45s")
    expect(formatReadingTime(60)).toBe("1m")
    expect(formatReadingTime(185)).toBe("3m 5s")
  })

  it("rounds like .NET (half to even after scaling)", () => {
    expect(roundHalfEven(0.125, 2)).toBe(0.12)
    expect(roundHalfEven(0.375, 2)).toBe(0.38)
    expect(roundHalfEven(2.5, 0)).toBe(2)
    expect(roundHalfEven(3.5, 0)).toBe(4)
    expect(roundHalfEven(1.25, 1)).toBe(1.2)
    expect(roundHalfEven(4.333333, 1)).toBe(4.3)
  })
})
