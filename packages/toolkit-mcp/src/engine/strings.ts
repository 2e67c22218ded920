/**
 * The `strings` topic as pure functions (reference A2/A3; counting rules follow pbtk's
 * components so results match the original tool). File I/O stays with the commands.
 */

// ---------------------------------------------------------------------------------------------
// Shared text rules.

/** pbtk's word: ASCII letters with at most one inner apostrophe part ("don't", "o'clock"). */
const WORD = /[A-Za-z]+(?:'[A-Za-z]+)?/g
/** A run of sentence-ending punctuation counts as one sentence end. */
const SENTENCE = /[.!?]+/g
/** .NET's `char.IsWhiteSpace` / regex `\s` set (JS `\s` differs: it has U+FEFF, lacks U+0085). */
const WS = "\\t-\\r\\x85\\p{Z}"
/** A blank line (only whitespace between two newlines) separates paragraphs. */
const PARAGRAPH_BREAK = new RegExp(`\\n[${WS}]*\\n`, "gu")
const WHITESPACE_CHAR = new RegExp(`[${WS}]`, "u")
const ALL_WHITESPACE = new RegExp(`^[${WS}]*$`, "u")

/** .NET's Math.Round(x, digits): scale, round half to even, unscale. */
export function roundHalfEven(x: number, digits: number): number {
  const scale = 10 ** digits
  const y = x * scale
  const f = Math.floor(y)
  const d = y - f
  const r = d > 0.5 ? f + 1 : d < 0.5 ? f : f % 2 === 0 ? f : f + 1
  return r / scale
}

function isBlank(text: string): boolean {
  return ALL_WHITESPACE.test(text)
}

// ---------------------------------------------------------------------------------------------
// reverse

export type ReverseUnit = "grapheme" | "code-point" | "code-unit"

let segmenter: Intl.Segmenter | undefined

/**
 * V8's grapheme iterator gets slower with the length of the text it walks (quadratic overall:
 * 64 KiB took seconds, 256 KiB minutes), so it only ever sees windows of this many code units.
 */
const SEGMENT_WINDOW = 256

const isAsciiBoundary = (text: string, at: number): boolean => {
  const before = text.charCodeAt(at - 1)
  const after = text.charCodeAt(at)
  // Between two ASCII characters there is always a cluster boundary, except inside "\r\n".
  return before < 0x80 && after < 0x80 && !(before === 13 && after === 10)
}

/** Clusters of a stretch that starts at a cluster boundary, segmented window by window. */
function segmentStretch(stretch: string, into: string[]): void {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "grapheme" })
  let start = 0
  while (start < stretch.length) {
    let end = Math.min(stretch.length, start + SEGMENT_WINDOW)
    const code = stretch.charCodeAt(end - 1)
    if (end < stretch.length && code >= 0xd800 && code <= 0xdbff) end-- // never cut a surrogate pair
    const pieces = Array.from(segmenter.segment(stretch.slice(start, end)), (piece) => piece.segment)
    // The window's last cluster may go on past it: it is segmented again with what follows.
    // (A single cluster longer than a window, hundreds of combining marks, is split.)
    if (end < stretch.length && pieces.length > 1) pieces.pop()
    for (const piece of pieces) {
      into.push(piece)
      start += piece.length
    }
  }
}

/** Extended grapheme clusters in order; plain ASCII does not go through the segmenter at all. */
function graphemeClusters(text: string): string[] {
  const clusters: string[] = []
  let i = 0
  while (i < text.length) {
    if (text.charCodeAt(i) < 0x80 && (i + 1 === text.length || isAsciiBoundary(text, i + 1))) {
      clusters.push(text.charAt(i++))
      continue
    }
    let end = i + 1
    while (end < text.length && !isAsciiBoundary(text, end)) end++
    segmentStretch(text.slice(i, end), clusters)
    i = end
  }
  return clusters
}

/**
 * Reverse text. By default by grapheme cluster, so emoji, combining accents and "\r\n" survive.
 * pbtk reversed UTF-16 code units, which splits surrogate pairs into invalid text; "code-unit"
 * reproduces that for anyone who needs it.
 */
export function reverseText(text: string, unit: ReverseUnit = "grapheme"): string {
  if (unit === "code-unit") {
    let out = ""
    for (let i = text.length - 1; i >= 0; i--) out += text[i]
    return out
  }
  if (unit === "code-point") return Array.from(text).reverse().join("")
  return graphemeClusters(text).reverse().join("")
}

// ---------------------------------------------------------------------------------------------
// levenshtein-distance

/** Refusal of a comparison that would take more than `maxPairs` steps (the work is quadratic). */
export class LevenshteinLimitError extends Error {
  override readonly name = "LevenshteinLimitError"
  constructor(
    readonly lengths: readonly [number, number],
    readonly maxPairs: number
  ) {
    super(
      `${lengths[0]} × ${lengths[1]} characters is more than the ${maxPairs.toLocaleString("en-US")} character pairs compared at most`
    )
  }
}

/**
 * Edit distance (insertions, deletions, substitutions; each costs 1) between two strings,
 * counted in Unicode code points (pbtk counted UTF-16 units, which makes an emoji two edits).
 * O(n·m) time, O(min(n, m)) memory; refused with LevenshteinLimitError when n·m > maxPairs.
 */
export function levenshteinDistance(a: string, b: string, maxPairs = Number.POSITIVE_INFINITY): number {
  let s = Array.from(a)
  let t = Array.from(b)
  if (s.length * t.length > maxPairs) throw new LevenshteinLimitError([s.length, t.length], maxPairs)
  if (s.length < t.length) [s, t] = [t, s]
  if (t.length === 0) return s.length
  let prev = new Uint32Array(t.length + 1)
  let cur = new Uint32Array(t.length + 1)
  for (let j = 0; j <= t.length; j++) prev[j] = j
  for (let i = 1; i <= s.length; i++) {
    cur[0] = i
    const si = s[i - 1]
    for (let j = 1; j <= t.length; j++) {
      const sub = (prev[j - 1] ?? 0) + (si === t[j - 1] ? 0 : 1)
      const del = (prev[j] ?? 0) + 1
      const ins = (cur[j - 1] ?? 0) + 1
      cur[j] = sub < del ? (sub < ins ? sub : ins) : del < ins ? del : ins
    }
    ;[prev, cur] = [cur, prev]
  }
  return prev[t.length] ?? 0
}

export function formatLevenshtein(distance: number): string {
  return `Levenshtein distance: ${distance}`
}

// ---------------------------------------------------------------------------------------------
// abjadify

/** .NET regex `\W`: anything but letters, non-spacing marks, decimal digits and connector punctuation. */
const NON_WORD_RUN = /([^\p{L}\p{Mn}\p{Nd}\p{Pc}]+)/u
const LETTER = /^\p{L}$/u
const VOWELS = /[aeiouAEIOU]/g

/**
 * Remove the vowels a, e, i, o, u (either case) from every word, except the one-letter words
 * "a" and "I" (either case). A "word" is a run of word characters that starts with a letter;
 * runs starting with a digit or "_" ("3rd", "_tmp") are left alone, as in pbtk.
 */
export function abjadify(text: string): string {
  const parts = text.split(NON_WORD_RUN)
  let out = ""
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? ""
    // Odd indexes are the separators captured by split.
    if (i % 2 === 1 || part === "" || !LETTER.test(part.charAt(0))) out += part
    else if (part === "a" || part === "A" || part === "i" || part === "I") out += part
    else out += part.replace(VOWELS, "")
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// flesch-reading-ease

export type ReadabilityBand =
  | "Very easy"
  | "Easy"
  | "Fairly easy"
  | "Standard"
  | "Fairly difficult"
  | "Difficult"
  | "Very confusing"
  | "N/A (empty input)"

export interface FleschResult {
  /** 206.835 − 1.015·(words/sentences) − 84.6·(syllables/words), clamped to 0..100, rounded to 2 places. */
  readonly score: number
  readonly band: ReadabilityBand
  readonly sentences: number
  readonly words: number
  readonly syllables: number
}

/**
 * Syllables of one word: groups of consecutive vowels (a e i o u y), minus a silent final
 * "e" (but not "-le") when more than one group, at least 1.
 */
export function countSyllables(word: string): number {
  const w = word.toLowerCase().replace(/[^a-z]/g, "")
  if (w === "") return 0
  let n = 0
  let prevVowel = false
  for (const c of w) {
    const vowel = c === "a" || c === "e" || c === "i" || c === "o" || c === "u" || c === "y"
    if (vowel && !prevVowel) n++
    prevVowel = vowel
  }
  if (w.endsWith("e") && !w.endsWith("le") && n > 1) n--
  return Math.max(1, n)
}

function band(score: number): ReadabilityBand {
  if (score >= 90) return "Very easy"
  if (score >= 80) return "Easy"
  if (score >= 70) return "Fairly easy"
  if (score >= 60) return "Standard"
  if (score >= 50) return "Fairly difficult"
  if (score >= 30) return "Difficult"
  return "Very confusing"
}

const EMPTY_FLESCH: FleschResult = { score: 0, band: "N/A (empty input)", sentences: 0, words: 0, syllables: 0 }

export function fleschReadingEase(text: string): FleschResult {
  if (isBlank(text)) return EMPTY_FLESCH
  const words = text.match(WORD) ?? []
  if (words.length === 0) return EMPTY_FLESCH
  const sentences = Math.max(1, (text.match(SENTENCE) ?? []).length)
  let syllables = 0
  for (const w of words) syllables += countSyllables(w)
  const raw = 206.835 - 1.015 * (words.length / sentences) - 84.6 * (syllables / words.length)
  const clamped = Math.min(100, Math.max(0, raw))
  // The band comes from the unrounded score, as in pbtk.
  return { score: roundHalfEven(clamped, 2), band: band(clamped), sentences, words: words.length, syllables }
}

/** Two aligned columns, values right-aligned (the shape of pbtk's table, without the box). */
function formatRows(rows: ReadonlyArray<readonly [string, string]>, title?: string): string {
  const lw = Math.max(...rows.map(([l]) => l.length))
  const vw = Math.max(...rows.map(([, v]) => v.length))
  const lines = rows.map(([l, v]) => `${l.padEnd(lw)}  ${v.padStart(vw)}`)
  if (title !== undefined) lines.unshift(title)
  return lines.join("\n")
}

export function formatFlesch(r: FleschResult): string {
  return formatRows([
    ["Flesch Reading Ease:", r.score.toFixed(2)],
    ["Readability:", r.band],
    ["Sentences:", String(r.sentences)],
    ["Words:", String(r.words)],
    ["Syllables:", String(r.syllables)]
  ])
}

// ---------------------------------------------------------------------------------------------
// report

export interface StringReport {
  /** UTF-16 code units, as .NET's string.Length. */
  readonly characters: number
  readonly charactersNoSpaces: number
  readonly words: number
  /** Distinct words, ignoring case. */
  readonly uniqueWords: number
  /** At least 1 for non-blank text. */
  readonly sentences: number
  /** Blank-line separated; at least 1 for non-blank text. */
  readonly paragraphs: number
  /** Rounded to 1 place. */
  readonly averageWordsPerSentence: number
  readonly averageSentencesPerParagraph: number
  /** ceil(words / 250) */
  readonly estimatedPages: number
  /** ceil(words / 238 · 60): 238 words per minute. */
  readonly estimatedReadingTimeSeconds: number
  readonly fleschReadingEase: number
  readonly readabilityBand: ReadabilityBand
  /** First longest word, as written. */
  readonly longestWord: string
  /** Lower-cased; ties go to the alphabetically first. */
  readonly mostCommonWord: string
}

export function stringReport(text: string): StringReport {
  if (isBlank(text)) {
    return {
      characters: 0,
      charactersNoSpaces: 0,
      words: 0,
      uniqueWords: 0,
      sentences: 0,
      paragraphs: 0,
      averageWordsPerSentence: 0,
      averageSentencesPerParagraph: 0,
      estimatedPages: 0,
      estimatedReadingTimeSeconds: 0,
      fleschReadingEase: 0,
      readabilityBand: "N/A (empty input)",
      longestWord: "",
      mostCommonWord: ""
    }
  }
  let noSpaces = 0
  for (const ch of text) if (!WHITESPACE_CHAR.test(ch)) noSpaces += ch.length
  const found = text.match(WORD) ?? []
  const counts = new Map<string, number>()
  let longest = ""
  for (const w of found) {
    const lw = w.toLowerCase()
    counts.set(lw, (counts.get(lw) ?? 0) + 1)
    if (w.length > longest.length) longest = w
  }
  let mostCommon = ""
  let best = 0
  for (const [w, n] of counts) {
    if (n > best || (n === best && w < mostCommon)) {
      mostCommon = w
      best = n
    }
  }
  const words = found.length
  const sentences = Math.max(1, (text.match(SENTENCE) ?? []).length)
  const paragraphs = Math.max(1, (text.match(PARAGRAPH_BREAK) ?? []).length + 1)
  const flesch = fleschReadingEase(text)
  return {
    characters: text.length,
    charactersNoSpaces: noSpaces,
    words,
    uniqueWords: counts.size,
    sentences,
    paragraphs,
    averageWordsPerSentence: roundHalfEven(words / sentences, 1),
    averageSentencesPerParagraph: roundHalfEven(sentences / paragraphs, 1),
    estimatedPages: Math.ceil(words / 250),
    estimatedReadingTimeSeconds: Math.ceil((words / 238) * 60),
    fleschReadingEase: flesch.score,
    readabilityBand: flesch.band,
    longestWord: longest,
    mostCommonWord: mostCommon
  }
}

/** "45s", "3m", "3m 5s" */
export function formatReadingTime(totalSeconds: number): string {
  if (totalSeconds < 60) return `${totalSeconds}s`
  const m = Math.floor(totalSeconds / 60)
  const s = totalSeconds % 60
  return s === 0 ? `${m}m` : `${m}m ${s}s`
}

export function formatStringReport(r: StringReport): string {
  return formatRows(
    [
      ["Characters (with spaces):", String(r.characters)],
      ["Characters (without spaces):", String(r.charactersNoSpaces)],
      ["Words:", String(r.words)],
      ["Unique words:", String(r.uniqueWords)],
      ["Sentences:", String(r.sentences)],
      ["Paragraphs:", String(r.paragraphs)],
      ["Avg words per sentence:", r.averageWordsPerSentence.toFixed(1)],
      ["Avg sentences per paragraph:", r.averageSentencesPerParagraph.toFixed(1)],
      ["Estimated pages:", String(r.estimatedPages)],
      ["Est. reading time:", formatReadingTime(r.estimatedReadingTimeSeconds)],
      ["Flesch Reading Ease:", r.fleschReadingEase.toFixed(2)],
      ["Readability:", r.readabilityBand],
      ["Longest word:", r.longestWord],
      ["Most common word:", r.mostCommonWord]
    ],
    "Text Analysis Report"
  )
}
