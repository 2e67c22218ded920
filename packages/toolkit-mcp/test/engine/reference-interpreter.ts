/**
 * A deliberately naive Brainfuck interpreter used as the oracle for differential tests:
 * 30,000 cells, pointer wrapping modulo 30,000, byte cells, `,` → 0 at end of input.
 */
export interface ReferenceResult {
  /** false when the step budget ran out first. */
  readonly finished: boolean
  readonly output: Uint8Array
  readonly tape: Uint8Array
  readonly pointer: number
}

export function referenceRun(source: string, input: Uint8Array, maxSteps: number): ReferenceResult {
  const code = source.replace(/[^+\-<>.,[\]]/g, "")
  const jump = new Int32Array(code.length)
  const stack: number[] = []
  for (let i = 0; i < code.length; i++) {
    if (code[i] === "[") stack.push(i)
    else if (code[i] === "]") {
      const open = stack.pop()
      if (open === undefined) throw new Error("unmatched ]")
      jump[open] = i
      jump[i] = open
    }
  }
  if (stack.length > 0) throw new Error("unmatched [")
  const tape = new Uint8Array(30000)
  const out: number[] = []
  let p = 0
  let inPos = 0
  let steps = 0
  for (let pc = 0; pc < code.length; pc++) {
    if (++steps > maxSteps) return { finished: false, output: Uint8Array.from(out), tape, pointer: p }
    switch (code[pc]) {
      case "+":
        tape[p] = ((tape[p] ?? 0) + 1) & 255
        break
      case "-":
        tape[p] = ((tape[p] ?? 0) - 1) & 255
        break
      case ">":
        p = p === 29999 ? 0 : p + 1
        break
      case "<":
        p = p === 0 ? 29999 : p - 1
        break
      case ".":
        out.push(tape[p] ?? 0)
        break
      case ",":
        tape[p] = inPos < input.length ? (input[inPos++] ?? 0) : 0
        break
      case "[":
        if (tape[p] === 0) pc = jump[pc] ?? pc
        break
      case "]":
        if (tape[p] !== 0) pc = jump[pc] ?? pc
        break
    }
  }
  return { finished: true, output: Uint8Array.from(out), tape, pointer: p }
}
