/**
 * Turning an argv into the one command string ssh carries. The guest's sshd hands that string
 * to the user's login shell (`sh -c`), so every word is single-quoted: inside single quotes a
 * POSIX shell interprets nothing, and a quote itself is written as `'\''` (close, escaped
 * quote, reopen). Tool input therefore never becomes shell syntax.
 */

/** Names accepted for `env` (the original's guard). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export const quoteWord = (word: string): string => `'${word.replaceAll("'", "'\\''")}'`

/** A word as a person types it: quoted only when a shell would split or expand it. */
export const shellWord = (word: string): string => (/^[A-Za-z0-9@%+=:,./_-]+$/.test(word) ? word : quoteWord(word))

/** Every word quoted, joined by spaces. Pure; a word may not contain NUL (no C string can). */
export const shellQuote = (argv: ReadonlyArray<string>): string => argv.map(quoteWord).join(" ")

/** Constant script: the directory arrives as `$1`, never spliced into the script text. */
export const CD_SCRIPT = 'cd "$1" && shift && exec "$@"'
/** Constant script that only execs its arguments, so a command word is never read as `NAME=value` by `env`. */
const EXEC_SCRIPT = 'exec "$@"'

export interface CommandOptions {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
}

/**
 * The argv (plus cwd/env) as the quoted command string: `env K=V … [sh -c CD stoat_cd DIR] argv…`.
 * Throws a TypeError on input no shell can carry (empty argv, NUL, a bad env name): callers
 * validate tool input before this, so reaching it is a bug.
 */
export const guestCommand = (argv: ReadonlyArray<string>, options: CommandOptions = {}): string => {
  if (argv.length === 0) throw new TypeError("exec needs a non-empty argv")
  let words: Array<string> = [...argv]
  if (options.cwd !== undefined) words = ["sh", "-c", CD_SCRIPT, "stoat_cd", options.cwd, ...words]
  const env = Object.entries(options.env ?? {})
  if (env.length > 0) {
    for (const [name] of env)
      if (!ENV_NAME.test(name)) throw new TypeError(`invalid environment variable name ${JSON.stringify(name)}`)
    // `env` takes a leading NAME=value word as one more assignment; route such a command through sh.
    if (words[0]?.includes("=")) words = ["sh", "-c", EXEC_SCRIPT, "stoat_env", ...words]
    words = ["env", ...env.map(([name, value]) => `${name}=${value}`), ...words]
  }
  for (const word of words) if (word.includes("\0")) throw new TypeError("argv, cwd and env may not contain NUL")
  return shellQuote(words)
}
