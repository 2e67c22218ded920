#!/usr/bin/env node
// P8: the toolkit's Brainfuck engine on mandelbrot.b versus the same program translated to C
// (run-length folding + clear loops) and compiled with gcc -O2. Target: ratio ≤ 3×.
//
// Usage: node bench/brainfuck/run.mjs [--engine=bin|lib] [--runs=3]
//   bin: `toolkit interpreters brainfuck --file …` (packages/toolkit-mcp/bin/run.js), the default when built;
//   lib: packages/toolkit-mcp/dist/engine/index.js in this process (compile + run on this thread).
// The programs are data in the shared directory: $STOAT_SHARED, else ../shared next to the repo.
import { execFileSync, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..")
const shared = process.env.STOAT_SHARED ?? resolve(root, "../shared")
const progs = join(shared, "bench/brainfuck")
const pkg = join(root, "packages/toolkit-mcp")
const bin = join(pkg, "bin/run.js")
const lib = join(pkg, "dist/engine/index.js")

const arg = (name, fallback) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`))
  return hit === undefined ? fallback : hit.slice(name.length + 3)
}
const runs = Number(arg("runs", "3"))
const engine = arg(
  "engine",
  process.env.BF_ENGINE ?? (existsSync(join(pkg, "dist/commands/interpreters/brainfuck.js")) ? "bin" : "lib")
)

if (!existsSync(join(progs, "mandelbrot.b"))) {
  console.error(`benchmark programs not found in ${progs} (set STOAT_SHARED)`)
  process.exit(2)
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const fmt = (ms) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`)
const load = (name) => ({
  path: join(progs, name),
  input: existsSync(join(progs, `${name}.in`)) ? readFileSync(join(progs, `${name}.in`)) : Buffer.alloc(0),
  expected: readFileSync(join(progs, `${name}.out`))
})

// ---------------------------------------------------------------------------------------------
// The engine under test.

let runEngine
if (engine === "bin") {
  if (!existsSync(bin)) throw new Error(`${bin} not found; build the package or use --engine=lib`)
  runEngine = (p) => {
    const t0 = performance.now()
    const r = spawnSync(process.execPath, [bin, "interpreters", "brainfuck", "--file", p.path], {
      input: p.input,
      maxBuffer: 1 << 28
    })
    const ms = performance.now() - t0
    if (r.status !== 0) throw new Error(`toolkit exited with ${r.status}: ${r.stdout}${r.stderr}`)
    return { ms, out: r.stdout }
  }
} else if (engine === "lib") {
  if (!existsSync(lib)) throw new Error(`${lib} not found; add the tsdown entry "engine/index" and build`)
  const { compileBrainfuck, runProgram } = await import(pathToFileURL(lib).href)
  runEngine = (p) => {
    const t0 = performance.now()
    const chunks = []
    runProgram(compileBrainfuck(readFileSync(p.path, "utf8")), { input: p.input, write: (c) => chunks.push(c) })
    return { ms: performance.now() - t0, out: Buffer.concat(chunks) }
  }
} else {
  throw new Error(`unknown engine ${engine}`)
}

// ---------------------------------------------------------------------------------------------
// Brainfuck → C: run-length folding and clear loops only (the classic simple translation).

function bfToC(source) {
  const code = source.replace(/[^+\-<>.,[\]]/g, "")
  const lines = [
    "#include <stdio.h>",
    "static unsigned char tape[30000];",
    "int main(void) {",
    "unsigned char *p = tape; int c;"
  ]
  for (let i = 0; i < code.length; ) {
    const ch = code[i]
    if (code.startsWith("[-]", i) || code.startsWith("[+]", i)) {
      lines.push("*p = 0;")
      i += 3
    } else if ("+-<>".includes(ch)) {
      let n = 0
      while (code[i] === ch) {
        n++
        i++
      }
      lines.push({ "+": `*p += ${n};`, "-": `*p -= ${n};`, ">": `p += ${n};`, "<": `p -= ${n};` }[ch])
    } else {
      lines.push(
        { ".": "putchar(*p);", ",": "c = getchar(); *p = c == EOF ? 0 : c;", "[": "while (*p) {", "]": "}" }[ch]
      )
      i++
    }
  }
  lines.push("return 0;", "}")
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------

const mandel = load("mandelbrot.b")
console.log(
  `engine: ${engine === "bin" ? "toolkit interpreters brainfuck --file (bin/run.js)" : "dist/engine/index.js runProgram"}; ${runs} runs each`
)

const engineTimes = []
for (let i = 0; i < runs; i++) {
  const { ms, out } = runEngine(mandel)
  if (!Buffer.from(out).equals(mandel.expected))
    throw new Error(`mandelbrot.b output differs from mandelbrot.b.out (run ${i + 1})`)
  engineTimes.push(ms)
}

const dir = mkdtempSync(join(tmpdir(), "bf-bench-"))
let cTimes = []
try {
  writeFileSync(join(dir, "mandelbrot.c"), bfToC(readFileSync(mandel.path, "utf8")))
  execFileSync("gcc", ["-O2", "-o", join(dir, "mandelbrot"), join(dir, "mandelbrot.c")])
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now()
    const r = spawnSync(join(dir, "mandelbrot"), [], { input: mandel.input, maxBuffer: 1 << 28 })
    cTimes.push(performance.now() - t0)
    if (!r.stdout.equals(mandel.expected)) throw new Error("C translation output differs from mandelbrot.b.out")
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}

const e = median(engineTimes)
const c = median(cTimes)
const ratio = e / c
console.log(`mandelbrot.b  engine median ${fmt(e)}  [${engineTimes.map(fmt).join(", ")}]`)
console.log(`mandelbrot.b  gcc -O2 median ${fmt(c)}  [${cTimes.map(fmt).join(", ")}]`)
console.log(`ratio ${ratio.toFixed(2)}x  (target <= 3x): ${ratio <= 3 ? "PASS" : "FAIL"}`)
// On a shared machine the minimum is the steadier estimate of what each side costs.
console.log(`ratio of minimums ${(Math.min(...engineTimes) / Math.min(...cTimes)).toFixed(2)}x`)

console.log("correctness pass:")
for (const name of ["hanoi.b", "long.b", "factor.b"]) {
  const p = load(name)
  const { ms, out } = runEngine(p)
  const ok = Buffer.from(out).equals(p.expected)
  console.log(`  ${name.padEnd(10)} ${ok ? "ok" : "WRONG OUTPUT"}  ${fmt(ms)}`)
  if (!ok) process.exitCode = 1
}
