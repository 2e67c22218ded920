/**
 * Optimizing Brainfuck compiler: source → folded IR → JavaScript (`new Function`).
 *
 * Semantics (pbtk's `BrainfuckInterpreter`, reference A4): a 30,000-cell byte tape, the pointer
 * wraps modulo 30,000 in both directions, cells wrap modulo 256, `,` stores the next input byte
 * or 0 at end of input, `.` emits one byte, every other character is a comment. Unlike pbtk we
 * reject unmatched brackets up front (pbtk silently stops or crashes with "Stack empty").
 *
 * The generated code is a self-contained function body (no imports), so it can be shipped as a
 * string to a worker thread and compiled there.
 */

export const TAPE_SIZE = 30_000
/** Output is handed to `write` in chunks of at most this many bytes. */
export const OUTPUT_CHUNK = 8192
/** Deepest bracket nesting we accept; deeper programs would overflow the JS parser's stack. */
export const MAX_NESTING = 1000

export type BrainfuckErrorKind = "unmatched-open" | "unmatched-close" | "too-deep"

/** A program that cannot be compiled. `offset` is a UTF-16 index into the source; line and column are 1-based. */
export class BrainfuckSyntaxError extends Error {
  override readonly name = "BrainfuckSyntaxError"
  constructor(
    readonly kind: BrainfuckErrorKind,
    readonly offset: number,
    readonly line: number,
    readonly column: number
  ) {
    super(
      kind === "unmatched-open"
        ? `Unmatched '[' at line ${line}, column ${column}: it has no closing ']'`
        : kind === "unmatched-close"
          ? `Unmatched ']' at line ${line}, column ${column}: it has no opening '['`
          : `Loops nested more than ${MAX_NESTING} deep at line ${line}, column ${column}`
    )
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing: run-length folded tokens in a loop tree.

// Token tags (plain constants rather than a const enum, which isolated-module transpilers handle unevenly).
const T = { Add: 0, Move: 1, Out: 2, In: 3, Loop: 4 } as const

type Tok =
  | { readonly t: typeof T.Add; n: number }
  | { readonly t: typeof T.Move; n: number }
  | { readonly t: typeof T.Out }
  | { readonly t: typeof T.In }
  | { readonly t: typeof T.Loop; readonly body: Tok[] }

const OUT: Tok = { t: T.Out }
const IN: Tok = { t: T.In }

function locate(source: string, offset: number): { line: number; column: number } {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < offset; i++) {
    if (source.charCodeAt(i) === 10) {
      line++
      lineStart = i + 1
    }
  }
  return { line, column: offset - lineStart + 1 }
}

function syntaxError(source: string, kind: BrainfuckErrorKind, offset: number): BrainfuckSyntaxError {
  const { line, column } = locate(source, offset)
  return new BrainfuckSyntaxError(kind, offset, line, column)
}

function parse(source: string): Tok[] {
  const root: Tok[] = []
  // Explicit stacks instead of recursion: deep nesting must produce an error, not a RangeError.
  const stack: Tok[][] = []
  const opens: number[] = []
  let cur = root
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i)
    switch (c) {
      case 43: // +
      case 45: {
        // -
        const d = c === 43 ? 1 : -1
        const last = cur[cur.length - 1]
        if (last !== undefined && last.t === T.Add) {
          last.n += d
          // "+-" cancels out; dropping it keeps "[+-]" an empty loop rather than a zero-step scan.
          if (last.n === 0) cur.pop()
        } else cur.push({ t: T.Add, n: d })
        break
      }
      case 62: // >
      case 60: {
        // <
        const d = c === 62 ? 1 : -1
        const last = cur[cur.length - 1]
        if (last !== undefined && last.t === T.Move) {
          last.n += d
          if (last.n === 0) cur.pop()
        } else cur.push({ t: T.Move, n: d })
        break
      }
      case 46: // .
        cur.push(OUT)
        break
      case 44: // ,
        cur.push(IN)
        break
      case 91: {
        // [
        if (stack.length >= MAX_NESTING) throw syntaxError(source, "too-deep", i)
        const body: Tok[] = []
        cur.push({ t: T.Loop, body })
        stack.push(cur)
        opens.push(i)
        cur = body
        break
      }
      case 93: {
        // ]
        const outer = stack.pop()
        if (outer === undefined) throw syntaxError(source, "unmatched-close", i)
        opens.pop()
        cur = outer
        break
      }
    }
  }
  const open = opens.pop()
  if (open !== undefined) throw syntaxError(source, "unmatched-open", open)
  return root
}

// ---------------------------------------------------------------------------------------------
// IR: operations addressed relative to the pointer at the start of a "segment" (a stretch where
// the pointer does not move), so pointer arithmetic is deferred to explicit Move items.

export type Item =
  /** cell[o] += v (v in 1..255) */
  | { readonly k: "add"; readonly o: number; readonly v: number }
  /** cell[o] = v */
  | { readonly k: "set"; readonly o: number; readonly v: number }
  /**
   * Multiply/copy loop on cell[o]: n = cell[o] * scale (mod 256) iterations, each adding f to
   * cell[target]; then cell[o] = 0.
   */
  | {
      readonly k: "mul"
      readonly o: number
      readonly scale: number
      readonly targets: ReadonlyArray<readonly [number, number]>
    }
  | { readonly k: "out"; readonly o: number }
  | { readonly k: "in"; readonly o: number }
  /** A loop on cell[o] whose body never moves the pointer (net 0, only balanced inner loops). */
  | { readonly k: "loop"; readonly o: number; readonly body: readonly Item[] }
  /** p += d (mod tape size) */
  | { readonly k: "move"; readonly d: number }
  /** A loop on cell[0] whose body moves the pointer; the body ends with its own Move. */
  | { readonly k: "uloop"; readonly body: readonly Item[] }
  /** while (cell[0]) p += d */
  | { readonly k: "scan"; readonly d: number }

const mod = (n: number, m: number): number => ((n % m) + m) % m

/**
 * Offsets are kept in (-15000, 15000], so two different offsets never name the same cell
 * (30,000 moves right is no move at all on a wrapping tape).
 */
const norm = (o: number): number => {
  const r = mod(o, TAPE_SIZE)
  return r > TAPE_SIZE / 2 ? r - TAPE_SIZE : r
}

/** Multiplicative inverse of an odd byte modulo 256. */
function inverse256(a: number): number {
  for (let x = 1; x < 256; x += 2) if ((a * x) % 256 === 1) return x
  throw new Error("no inverse")
}

/** Whether a loop body leaves the pointer where it was, with only such loops inside (so the pointer never moves in it). */
function isBalanced(body: readonly Tok[], memo: Map<readonly Tok[], boolean>): boolean {
  const known = memo.get(body)
  if (known !== undefined) return known
  let net = 0
  let ok = true
  for (const t of body) {
    if (t.t === T.Move) net = norm(net + t.n)
    else if (t.t === T.Loop && !isBalanced(t.body, memo)) {
      ok = false
      break
    }
  }
  const result = ok && net === 0
  memo.set(body, result)
  return result
}

/** Recognize a loop made only of +-<> with net movement 0 and an odd change on its origin cell. */
function asMultiply(body: readonly Tok[]): { scale: number; targets: Array<[number, number]> } | null {
  let off = 0
  const deltas = new Map<number, number>()
  for (const t of body) {
    if (t.t === T.Move) off = norm(off + t.n)
    else if (t.t === T.Add) deltas.set(off, (deltas.get(off) ?? 0) + t.n)
    else return null
  }
  if (off !== 0) return null
  const origin = mod(deltas.get(0) ?? 0, 256)
  // Odd origin steps always reach zero after (-cell / step) mod 256 iterations; even ones may spin forever.
  if (origin % 2 === 0) return null
  deltas.delete(0)
  const targets: Array<[number, number]> = []
  for (const [o, d] of deltas) {
    const f = mod(d, 256)
    if (f !== 0) targets.push([o, f])
  }
  return { scale: inverse256(mod(-origin, 256)), targets }
}

/** Offsets an item list may write (segments only: no moves inside). */
function touched(items: readonly Item[], into: Set<number> = new Set()): Set<number> {
  for (const it of items) {
    switch (it.k) {
      case "add":
      case "set":
      case "in":
        into.add(it.o)
        break
      case "mul":
        into.add(it.o)
        for (const [o] of it.targets) into.add(o)
        break
      case "loop":
        touched(it.body, into)
        break
      default:
        break
    }
  }
  return into
}

class Folder {
  private readonly memo = new Map<readonly Tok[], boolean>()

  /**
   * Fold a token list into items addressed from `base`. With `keepShift` the net pointer
   * movement ends the list as a Move item (an unbalanced loop body or the program); otherwise
   * the list must not move the pointer (a balanced loop body).
   */
  fold(toks: readonly Tok[], base: number, keepShift: boolean): Item[] {
    const out: Item[] = []
    // Pending writes per offset: adds/sets commute across different cells, so they are
    // delayed until something reads the cell (or a loop makes order matter).
    const pending = new Map<number, { set: boolean; v: number }>()
    // Offsets whose cell is known to be 0 here (after a loop on it, a clear, ...): loops on
    // them are skipped and additions to them become plain stores.
    const zero = new Set<number>()
    let cur = base
    const flushOne = (o: number): void => {
      const w = pending.get(o)
      if (w === undefined) return
      pending.delete(o)
      const v = mod(w.v, 256)
      if (w.set) out.push({ k: "set", o, v })
      else if (v !== 0) out.push({ k: "add", o, v })
    }
    const flushAll = (): void => {
      for (const o of [...pending.keys()]) flushOne(o)
    }
    const flushMove = (): void => {
      flushAll()
      if (cur !== 0) out.push({ k: "move", d: cur })
      cur = 0
      zero.clear()
    }
    const isZero = (o: number): boolean => {
      const w = pending.get(o)
      return w === undefined ? zero.has(o) : w.set && mod(w.v, 256) === 0
    }
    for (const t of toks) {
      switch (t.t) {
        case T.Add: {
          const w = pending.get(cur)
          if (w) w.v += t.n
          else pending.set(cur, { set: zero.has(cur), v: t.n })
          zero.delete(cur)
          break
        }
        case T.Move:
          cur = norm(cur + t.n)
          break
        case T.Out:
          flushOne(cur)
          out.push({ k: "out", o: cur })
          break
        case T.In:
          // Reading overwrites the cell, so pending writes to it are dead.
          pending.delete(cur)
          zero.delete(cur)
          out.push({ k: "in", o: cur })
          break
        case T.Loop: {
          // A loop on a cell known to be zero is never entered (this also drops comment loops after loops).
          if (isZero(cur)) break
          const body = t.body
          const only = body.length === 1 ? body[0] : undefined
          if (only !== undefined && only.t === T.Move) {
            flushMove()
            out.push({ k: "scan", d: only.n })
            zero.add(0)
            break
          }
          const m = asMultiply(body)
          if (m !== null) {
            if (m.targets.length === 0) {
              // A clear is just a pending store of 0.
              pending.set(cur, { set: true, v: 0 })
              break
            }
            flushAll()
            const targets = m.targets.map(([o, f]) => [norm(o + cur), f] as const)
            out.push({ k: "mul", o: cur, scale: m.scale, targets })
            for (const [o] of targets) zero.delete(o)
            zero.add(cur)
            break
          }
          if (isBalanced(body, this.memo)) {
            flushAll()
            const inner = this.fold(body, cur, false)
            out.push({ k: "loop", o: cur, body: inner })
            // The loop can only have changed the cells its body names.
            for (const o of touched(inner)) zero.delete(o)
            zero.add(cur)
          } else {
            flushMove()
            out.push({ k: "uloop", body: this.fold(body, 0, true) })
            zero.add(0)
          }
          break
        }
      }
    }
    if (keepShift) flushMove()
    else flushAll()
    return out
  }
}

// ---------------------------------------------------------------------------------------------
// Code generation.

/** Generated functions are kept near this many characters (see Generator.join). */
const FUNCTION_BUDGET = 2000

function loopDepth(items: readonly Item[]): number {
  let d = 0
  for (const it of items) if (it.k === "loop" || it.k === "uloop") d = Math.max(d, 1 + loopDepth(it.body))
  return d
}

function offsetRange(items: readonly Item[], r: { lo: number; hi: number }): void {
  const see = (o: number): void => {
    if (o < r.lo) r.lo = o
    if (o > r.hi) r.hi = o
  }
  for (const it of items) {
    switch (it.k) {
      case "add":
      case "set":
      case "out":
      case "in":
        see(it.o)
        break
      case "mul":
        see(it.o)
        for (const [o] of it.targets) see(o)
        break
      case "loop":
        see(it.o)
        offsetRange(it.body, r)
        break
      default:
        break
    }
  }
}

export interface CodegenOptions {
  /**
   * Loop iterations between calls to the periodic hook (`io.poll()` plus a time-based output
   * flush). 0 emits no checks at all: fastest, but then only terminating the thread stops an
   * endless loop. Default 0.
   */
  readonly tick?: number
  /**
   * "chunks": output is buffered and handed to `io.write(chunk)`.
   * "ring": output goes byte by byte into the SharedArrayBuffer ring `io.ring` (see RING_*),
   * so another thread can read it while this one computes. Default "chunks".
   */
  readonly output?: "chunks" | "ring"
}

/** A piece of generated code that may be moved into its own function if its parent grows too big. */
interface Piece {
  code: string
  /** "void": a loop that keeps p; "p": a loop that returns the new p; null: not movable. */
  readonly kind: "void" | "p" | null
  /** Always move it out: bounds the nesting depth of generated functions (V8's parser recurses). */
  readonly force?: boolean
}

/**
 * Every generated function copies the tape into a local: TurboFan then checks the typed array
 * once per call instead of reloading it from the closure context at each access (measured:
 * ~15% faster runs and less than half the optimizing-compile time on mandelbrot.b).
 */
const FUNCTION_HEAD = "const m=M;let x=0;"

/** Loop nesting levels per generated function before loops are moved out regardless of size. */
const MAX_DEPTH_PER_FUNCTION = 32

class Generator {
  private readonly fns: string[] = []
  private readonly segs: string[] = []
  constructor(
    private readonly tick: number,
    private readonly budget: number
  ) {}

  private depth = 0
  private readonly scans = new Map<string, string>()
  private segCount = 0

  private segName(): string {
    return `S${this.segCount++}`
  }

  /**
   * Encode a segment for `slow()`, the wrap-around path. An inner loop's body becomes its own
   * constant, referenced by name, so deep nesting never makes a deeply nested array literal.
   */
  private encode(items: readonly Item[]): string {
    const ops = items.map((it) => {
      switch (it.k) {
        case "add":
          return `[0,${it.o},${it.v}]`
        case "set":
          return `[1,${it.o},${it.v}]`
        case "mul":
          return `[2,${it.o},${it.scale},[${it.targets.flat().join(",")}]]`
        case "out":
          return `[3,${it.o}]`
        case "in":
          return `[4,${it.o}]`
        case "loop": {
          const name = this.segName()
          this.segs.push(`const ${name}=${this.encode(it.body)};`)
          return `[5,${it.o},${name}]`
        }
        default:
          throw new Error(`unexpected ${it.k} in a segment`)
      }
    })
    return `[${ops.join(",")}]`
  }

  /** Generate a loop body one nesting level deeper; returns the code and whether to force it out. */
  private nested(f: () => string): { code: string; force: boolean } {
    this.depth++
    try {
      return { code: f(), force: this.depth % MAX_DEPTH_PER_FUNCTION === 0 }
    } finally {
      this.depth--
    }
  }

  private at(o: number): string {
    return o === 0 ? "m[p]" : o > 0 ? `m[p+${o}]` : `m[p-${-o}]`
  }

  private tickCode(): string {
    // One counter for the whole program (not per function): a hot loop that calls a short
    // outlined loop would otherwise never reach the limit in either function.
    return this.tick === 0 ? "" : `if(++T===${this.tick}){T=0;hook()}`
  }

  /**
   * Join pieces; while the result is over budget, move the biggest movable pieces into
   * separate functions. V8 compiles small functions quickly and optimizes them well, while
   * one huge function is compiled slowly (or never) and deoptimizes expensively.
   */
  private join(pieces: Piece[]): string {
    let total = 0
    for (const p of pieces) total += p.code.length
    if (total > this.budget || pieces.some((p) => p.force === true)) {
      const order = pieces
        .filter((p) => p.kind !== null && (p.code.length > 60 || p.force === true))
        .sort((a, b) => (b.force === true ? 1 : 0) - (a.force === true ? 1 : 0) || b.code.length - a.code.length)
      for (const p of order) {
        if (total <= this.budget && p.force !== true) break
        const name = `f${this.fns.length}`
        const body = p.kind === "p" ? `${p.code}return p` : p.code
        this.fns.push(`function ${name}(p){${FUNCTION_HEAD}${body}}`)
        const call = p.kind === "p" ? `p=${name}(p);` : `${name}(p);`
        total += call.length - p.code.length
        p.code = call
      }
    }
    return pieces.map((p) => p.code).join("")
  }

  /** Pieces for items inside a segment (the pointer is constant and every address is in range). */
  private fast(items: readonly Item[]): Piece[] {
    const pieces: Piece[] = []
    let s = ""
    const cut = (): void => {
      if (s !== "") pieces.push({ code: s, kind: null })
      s = ""
    }
    for (const it of items) {
      switch (it.k) {
        case "add":
          s += it.v < 128 ? `${this.at(it.o)}+=${it.v};` : `${this.at(it.o)}-=${256 - it.v};`
          break
        case "set":
          s += `${this.at(it.o)}=${it.v};`
          break
        case "out":
          s += `put(${this.at(it.o)});`
          break
        case "in":
          s += `${this.at(it.o)}=ip<il?input[ip++]:0;`
          break
        case "mul": {
          s += `if((x=${this.at(it.o)})!==0){`
          if (it.scale !== 1) s += `x=(x*${it.scale})&255;`
          for (const [o, f] of it.targets) {
            s +=
              f === 1
                ? `${this.at(o)}+=x;`
                : f === 255
                  ? `${this.at(o)}-=x;`
                  : f < 128
                    ? `${this.at(o)}+=x*${f};`
                    : `${this.at(o)}-=x*${256 - f};`
          }
          s += `${this.at(it.o)}=0}`
          break
        }
        case "loop": {
          cut()
          const body = this.nested(() => this.join(this.fast(it.body)))
          pieces.push({
            code: `while(${this.at(it.o)}!==0){${body.code}${this.tickCode()}}`,
            kind: "void",
            force: body.force
          })
          break
        }
        default:
          throw new Error(`unexpected ${it.k} in a segment`)
      }
    }
    cut()
    return pieces
  }

  /**
   * A segment with every cell it touches held in a local variable: loads once at the start,
   * stores once at the end, and inner loops run entirely in registers. Returns null when the
   * segment is too big for this (it is then generated cell by cell, with outlinable loops).
   */
  private cached(items: readonly Item[], cell0?: string): string | null {
    const names = new Map<number, string>()
    const load = new Set<number>()
    const written = new Set<number>()
    const defined = new Set<number>()
    const name = (o: number): string => {
      let n = names.get(o)
      if (n === undefined) {
        n = `c${names.size}`
        names.set(o, n)
      }
      return n
    }
    // A cell must be loaded if it may be read, or written only conditionally, before a
    // top-level write defines it.
    const touch = (o: number, write: boolean, read: boolean, top: boolean): string => {
      if (write) written.add(o)
      if (!defined.has(o)) {
        if (read || !top) load.add(o)
        defined.add(o)
      }
      return name(o)
    }
    const body = (list: readonly Item[], top: boolean): string => {
      let s = ""
      for (const it of list) {
        switch (it.k) {
          case "add": {
            const c = touch(it.o, true, true, top)
            s += `${c}=(${c}+${it.v})&255;`
            break
          }
          case "set":
            s += `${touch(it.o, true, false, top)}=${it.v};`
            break
          case "out":
            s += `put(${touch(it.o, false, true, top)});`
            break
          case "in":
            s += `${touch(it.o, true, false, top)}=ip<il?input[ip++]:0;`
            break
          case "mul": {
            const c = touch(it.o, true, true, top)
            let inner = it.scale === 1 ? "" : `x=(${c}*${it.scale})&255;`
            const v = it.scale === 1 ? c : "x"
            for (const [o, f] of it.targets) {
              const t = touch(o, true, true, false)
              inner += f === 1 ? `${t}=(${t}+${v})&255;` : `${t}=(${t}+${v}*${f})&255;`
            }
            s += `if(${c}!==0){${inner}${c}=0}`
            break
          }
          case "loop": {
            const c = touch(it.o, false, true, top)
            s += `while(${c}!==0){${body(it.body, false)}${this.tickCode()}}`
            break
          }
          default:
            throw new Error(`unexpected ${it.k} in a segment`)
        }
      }
      return s
    }
    if (loopDepth(items) > MAX_DEPTH_PER_FUNCTION / 2) return null
    const code = body(items, true)
    if (names.size > 64 || code.length > this.budget * 2) return null
    const decl: string[] = []
    for (const [o, n] of names)
      decl.push(load.has(o) ? `${n}=${o === 0 && cell0 !== undefined ? cell0 : this.at(o)}` : `${n}=0`)
    let stores = ""
    for (const o of written) stores += `${this.at(o)}=${name(o)};`
    return `let ${decl.join(",")};${code}${stores}`
  }

  private segment(items: readonly Item[], pieces: Piece[]): void {
    if (items.length === 0) return
    const r = { lo: 0, hi: 0 }
    offsetRange(items, r)
    const span = r.hi - r.lo
    const seg = this.segName()
    this.segs.push(`const ${seg}=${this.encode(items)};`)
    if (span >= TAPE_SIZE) {
      pieces.push({ code: `slow(${seg},p);`, kind: null })
      return
    }
    const cached = this.cached(items)
    const fast = cached === null ? this.join(this.fast(items)) : cached
    // One unsigned compare proves every address p+lo..p+hi lies on the tape; otherwise take
    // the (rare) wrap-around path, which interprets the same items with modular addressing.
    const cond =
      r.lo === 0 && r.hi === 0
        ? null
        : r.lo === 0
          ? `p<=${TAPE_SIZE - 1 - r.hi}`
          : `(p${r.lo < 0 ? "-" + -r.lo : "+" + r.lo})>>>0<=${TAPE_SIZE - 1 - span}`
    pieces.push({ code: cond === null ? `{${fast}}` : `if(${cond}){${fast}}else slow(${seg},p);`, kind: "void" })
  }

  private move(d: number): string {
    return d <= TAPE_SIZE / 2
      ? `p+=${d};if(p>=${TAPE_SIZE})p-=${TAPE_SIZE};`
      : `p-=${TAPE_SIZE - d};if(p<0)p+=${TAPE_SIZE};`
  }

  /** `while (cell) p += d` for a normalized d. */
  private scan(d: number): string {
    if (d === 1) return "p=scanR(p);"
    if (d === TAPE_SIZE - 1) return "p=scanL(p);"
    if (d === 0) return "while(m[p]!==0)hook();"
    const e = d <= TAPE_SIZE / 2 ? d : d - TAPE_SIZE
    const a = Math.abs(e)
    if (a > 1000) return `while(m[p]!==0){${this.move(d)}${this.tickCode()}}`
    // One shared helper per stride: programs repeat the same scans many times, and each copy
    // would cost optimizing-compiler time.
    const name = `sc${e > 0 ? "" : "_"}${a}`
    if (!this.scans.has(name)) {
      // Unrolled 4x away from the tape ends: one range test per four cells instead of a wrap test per cell.
      const sgn = e > 0 ? "+" : "-"
      const room = e > 0 ? `p<=${TAPE_SIZE - 1 - 4 * a}` : `p>=${4 * a}`
      let probe = "if(m[p]===0)return p;"
      for (let k = 1; k < 4; k++) probe += `if(m[p${sgn}${k * a}]===0)return p${sgn}${k * a};`
      this.scans.set(
        name,
        `function ${name}(p){const m=M;for(;;){if(${room}){${probe}p${sgn}=${4 * a}}else{if(m[p]===0)return p;${this.move(d)}${this.tickCode()}}}}`
      )
    }
    return `p=${name}(p);`
  }

  /**
   * An unbalanced loop whose body is one segment and a final move (a walk over records of a
   * fixed stride). While the whole body stays on the tape, a single range test replaces both
   * the segment guard and the wrap test of the move.
   */
  private strideLoop(body: readonly Item[]): string | null {
    const last = body[body.length - 1]
    if (last === undefined || last.k !== "move") return null
    const items = body.slice(0, -1)
    if (items.length === 0 || items.some((it) => it.k === "move" || it.k === "uloop" || it.k === "scan")) return null
    const d = mod(last.d, TAPE_SIZE)
    const e = d <= TAPE_SIZE / 2 ? d : d - TAPE_SIZE
    const r = { lo: 0, hi: 0 }
    offsetRange(items, r)
    const lo = Math.max(-r.lo, e < 0 ? -e : 0)
    const hi = Math.min(TAPE_SIZE - 1 - r.hi, e > 0 ? TAPE_SIZE - 1 - e : TAPE_SIZE - 1)
    if (hi < lo) return null
    const seg = this.segName()
    this.segs.push(`const ${seg}=${this.encode(items)};`)
    // The loop test's load of the current cell doubles as the segment's load of it.
    const cached = this.cached(items, "v")
    const fast = cached ?? this.join(this.fast(items))
    const step = e > 0 ? `p+=${e};` : `p-=${-e};`
    const cond = lo === 0 ? `p<=${hi}` : `(p-${lo})>>>0<=${hi - lo}`
    return `for(;;){const v=m[p];if(v===0)break;if(${cond}){${fast}${step}}else{slow(${seg},p);${this.move(d)}}${this.tickCode()}}`
  }

  /** Pieces for a sequence in which the pointer moves (top level or an unbalanced loop body). */
  seq(items: readonly Item[]): Piece[] {
    const pieces: Piece[] = []
    let run: Item[] = []
    for (const it of items) {
      if (it.k === "move" || it.k === "uloop" || it.k === "scan") {
        this.segment(run, pieces)
        run = []
        if (it.k === "move") {
          const d = mod(it.d, TAPE_SIZE)
          if (d !== 0) pieces.push({ code: this.move(d), kind: null })
        } else if (it.k === "scan") {
          pieces.push({ code: this.scan(mod(it.d, TAPE_SIZE)), kind: null })
        } else {
          const body = this.nested(
            () => this.strideLoop(it.body) ?? `while(m[p]!==0){${this.join(this.seq(it.body))}${this.tickCode()}}`
          )
          pieces.push({ code: body.code, kind: "p", force: body.force })
        }
      } else {
        run.push(it)
      }
    }
    this.segment(run, pieces)
    return pieces
  }

  program(items: readonly Item[], output: "chunks" | "ring"): string {
    const main = this.join(this.seq(items))
    return [
      output === "ring" ? RING_PRELUDE : CHUNK_PRELUDE,
      PRELUDE,
      ...this.scans.values(),
      ...this.segs,
      ...this.fns,
      `function main(){let p=0;${FUNCTION_HEAD}${main}return p}`,
      output === "ring" ? "main();" : "const P=main();fl();if(io.exit!==undefined)io.exit(m,P);"
    ].join("\n")
  }
}

/** Ring layout: an Int32 header (bytes written, bytes consumed; both wrap at 2^32), then the ring. */
export const RING_HEADER_BYTES = 16
export const RING_BYTES = 1 << 16

/** Output through `io.write(chunk)`; `io.poll()` may throw to stop; buffered output older than `io.flushMs` is flushed at a poll. */
const CHUNK_PRELUDE = `const write=io.write,poll=io.poll,flushMs=io.flushMs,ob=new Uint8Array(${OUTPUT_CHUNK});
let on=0,last=Date.now();
function fl(){if(on!==0){write(ob.slice(0,on));on=0}last=Date.now()}
function put(v){ob[on++]=v;if(on===${OUTPUT_CHUNK})fl()}
function hook(){if(on!==0&&Date.now()-last>=flushMs)fl();poll()}`

/**
 * Output into a SharedArrayBuffer ring: the writer publishes its count after every byte and
 * sleeps when the ring is full (after asking the reader to drain via `io.full()`).
 */
const RING_PRELUDE = `const h=new Int32Array(io.ring,0,4),ob=new Uint8Array(io.ring,${RING_HEADER_BYTES}),MASK=ob.length-1,full=io.full,poll=io.poll;
let w=0,rc=0;
function put(v){ob[w&MASK]=v;w=(w+1)|0;Atomics.store(h,0,w);if(((w-rc)|0)>MASK)space()}
function space(){rc=Atomics.load(h,1);while(((w-rc)|0)>MASK){full();Atomics.wait(h,1,rc,250);rc=Atomics.load(h,1)}}
function hook(){poll()}`

/** Tape, input and helpers shared by both output modes. */
const PRELUDE = `const L=${TAPE_SIZE},M=new Uint8Array(L),m=M,il=input.length;
let ip=0,T=0;
function scanR(p){let i=m.indexOf(0,p);if(i<0)i=m.indexOf(0);if(i<0)for(;;)hook();return i}
function scanL(p){let i=m.lastIndexOf(0,p);if(i<0)i=m.lastIndexOf(0);if(i<0)for(;;)hook();return i}
function slow(s,p){const a=(o)=>((p+o)%L+L)%L;
for(const op of s){const o=a(op[1]);switch(op[0]){
case 0:m[o]+=op[2];break;
case 1:m[o]=op[2];break;
case 2:{const x=(m[o]*op[2])&255;if(x!==0){const g=op[3];for(let i=0;i<g.length;i+=2)m[a(g[i])]+=x*g[i+1];m[o]=0}break}
case 3:put(m[o]);break;
case 4:m[o]=ip<il?input[ip++]:0;break;
case 5:while(m[o]!==0){slow(op[2],p);if(++T>=1024){T=0;hook()}}break}}}`

// ---------------------------------------------------------------------------------------------
// Public API.

export interface ProgramStats {
  /** Brainfuck command characters in the source. */
  readonly commands: number
  /** IR items after folding (all nesting levels). */
  readonly items: number
}

export interface Program {
  readonly ir: readonly Item[]
  readonly stats: ProgramStats
  /**
   * JavaScript source of a function body taking `(input, io)`; see CodegenOptions for `io`.
   * Self-contained (no imports), so it can be compiled in another thread.
   */
  code(options?: CodegenOptions): string
}

function countItems(items: readonly Item[]): number {
  let n = 0
  for (const it of items) {
    n++
    if (it.k === "loop" || it.k === "uloop") n += countItems(it.body)
  }
  return n
}

/** Parse and optimize a program. Throws BrainfuckSyntaxError on unmatched brackets. */
export function compileBrainfuck(source: string): Program {
  const toks = parse(source)
  const ir = new Folder().fold(toks, 0, true)
  let commands = 0
  for (let i = 0; i < source.length; i++) {
    const c = source.charCodeAt(i)
    if (c === 43 || c === 45 || c === 60 || c === 62 || c === 46 || c === 44 || c === 91 || c === 93) commands++
  }
  const cache = new Map<string, string>()
  return {
    ir,
    stats: { commands, items: countItems(ir) },
    code(options) {
      const tick = options?.tick ?? 0
      const output = options?.output ?? "chunks"
      const key = `${tick}/${output}`
      let c = cache.get(key)
      if (c === undefined) {
        c = new Generator(tick, FUNCTION_BUDGET).program(ir, output)
        cache.set(key, c)
      }
      return c
    }
  }
}

export interface ChunkIo {
  readonly write: (chunk: Uint8Array) => void
  readonly poll: () => void
  readonly flushMs: number
  /** Called after a normal end with the final tape and pointer. */
  readonly exit?: (tape: Uint8Array, pointer: number) => void
}

export interface RingIo {
  readonly ring: SharedArrayBuffer
  readonly full: () => void
  readonly poll: () => void
}

let instances = 0

/**
 * Compile generated code into a callable, once per run. The unique trailer defeats V8's
 * source cache for `new Function`: a second run of the same program would otherwise share
 * the first run's feedback and optimized code, which measured slower (up to 2x) than a fresh start.
 */
export function instantiate(code: string): (input: Uint8Array, io: ChunkIo | RingIo) => void {
  return new Function("input", "io", `"use strict";\n${code}\n// run ${++instances}`) as (
    input: Uint8Array,
    io: ChunkIo | RingIo
  ) => void
}

export interface RunOptions {
  readonly input?: Uint8Array
  /** Receives output chunks (fresh copies, at most OUTPUT_CHUNK bytes each). */
  readonly write: (chunk: Uint8Array) => void
  /** Polled every `tick` loop iterations; returning true stops the run with BrainfuckStoppedError. */
  readonly shouldStop?: () => boolean
  /** Loop iterations between polls when `shouldStop` is given (default 4096). */
  readonly tick?: number
  /** With `shouldStop`, buffered output is flushed at a poll once it is this old (default 50 ms), so slow programs stream. */
  readonly flushMs?: number
  /** Called after a normal end with the final tape and pointer (for tests and debugging). */
  readonly onExit?: (tape: Uint8Array, pointer: number) => void
}

/** Thrown by runProgram when `shouldStop` returned true. Output written so far stays written. */
export class BrainfuckStoppedError extends Error {
  override readonly name = "BrainfuckStoppedError"
  constructor() {
    super("Brainfuck program stopped before it finished")
  }
}

const noop = (): void => {}

/**
 * Run a compiled program synchronously on the current thread. Without `shouldStop` the
 * generated code has no interruption checks, so an endless program blocks forever: use
 * runBrainfuck (run-in-worker.ts) for untrusted programs.
 */
export function runProgram(program: Program, options: RunOptions): void {
  const shouldStop = options.shouldStop
  const tick = shouldStop === undefined ? 0 : Math.max(1, options.tick ?? 4096)
  const run = instantiate(program.code({ tick }))
  const poll =
    shouldStop === undefined
      ? noop
      : (): void => {
          if (shouldStop()) throw new BrainfuckStoppedError()
        }
  const io: ChunkIo = {
    write: options.write,
    poll,
    flushMs: options.flushMs ?? 50,
    ...(options.onExit ? { exit: options.onExit } : {})
  }
  run(options.input ?? new Uint8Array(0), io)
}

/** Convenience: compile, run to completion on this thread, and return all output. */
export function runToBuffer(source: string, input: Uint8Array = new Uint8Array(0)): Uint8Array {
  const chunks: Uint8Array[] = []
  runProgram(compileBrainfuck(source), { input, write: (c) => chunks.push(c) })
  return Buffer.concat(chunks)
}
