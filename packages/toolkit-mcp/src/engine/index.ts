/** The engine's public surface: Brainfuck compiler and runners, Ook!, and the strings actions. */
export {
  BrainfuckStoppedError,
  BrainfuckSyntaxError,
  compileBrainfuck,
  MAX_NESTING,
  OUTPUT_CHUNK,
  runProgram,
  runToBuffer,
  TAPE_SIZE,
  type BrainfuckErrorKind,
  type Program,
  type RunOptions
} from "./brainfuck.js"
export {
  BrainfuckAbortError,
  BrainfuckWorkerError,
  closeBrainfuckWorkers,
  resolveBrainfuckWorker,
  runBrainfuck,
  setBrainfuckWorkerUrl,
  type RunBrainfuckOptions
} from "./run-in-worker.js"
export { bfToOok, compileOok, ookToBrainfuck, translateOok, type OokTranslation } from "./ook.js"
export {
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
  stringReport,
  type FleschResult,
  type ReadabilityBand,
  type ReverseUnit,
  type StringReport
} from "./strings.js"
