/**
 * The guest-side shell used by the guest operations. Every script here is a constant: tool input
 * reaches it only as positional arguments (`sh -c SCRIPT stoat_x ARG…`), which the transport
 * single-quotes, so a path or name never becomes shell syntax. They run on busybox ash as on
 * bash/dash with GNU coreutils.
 */

/** `sh -c` of a constant script with its arguments as `$1…`; `$0` names the helper in guest error messages. */
export const script = (name: string, body: string, args: ReadonlyArray<string> = []): Array<string> => [
  "sh",
  "-c",
  body,
  `stoat_${name}`,
  ...args
]

/**
 * Runs `$2…` in a session, so a process group, of its own; a TERM to this wrapper (the
 * transport's deadline and cancel) TERMs the whole group, background children included, and
 * KILLs what is left a second later. A program that does not exist is said plainly, exit 127.
 * The command's stdin is handed on through fd 3: an asynchronous command's own is /dev/null. A
 * guest without `setsid` runs the command under its `timeout` of `$1` seconds, or as is.
 */
export const TIMEOUT_SCRIPT = [
  "t=$1; shift",
  'command -v "$1" >/dev/null 2>&1 || { printf "command not found: %s\\n" "$1" >&2; exit 127; }',
  'if ! command -v setsid >/dev/null 2>&1; then command -v timeout >/dev/null 2>&1 && exec timeout -k 2 "$t" "$@"; exec "$@"; fi',
  "exec 3<&0",
  'setsid "$@" <&3 3<&- &',
  "c=$!",
  "exec 3<&-",
  // The pid too: a TERM that comes before setsid ran finds no group yet.
  "trap 'kill -TERM $c -$c 2>/dev/null; sleep 1; kill -KILL $c -$c 2>/dev/null; exit 143' TERM",
  // The shell's own notice of a signalled command ("Terminated") is not the command's output.
  "wait $c 2>/dev/null"
].join("\n")

/**
 * stat fields of one entry, tab-separated: size, raw mode (hex), mtime (epoch), owner, type.
 * No name: names travel NUL-separated apart from these lines, so a newline in a name cannot
 * shift a record.
 */
export const STAT_FORMAT = "%s\t%f\t%Y\t%U\t%F"

/** `stat` of `$1` without following a final symlink. */
export const STAT_SCRIPT = `exec stat -c '${STAT_FORMAT}' -- "$1"`

/**
 * The entries of directory `$1`: up to `$2` names each ended by NUL, one more NUL, the count of
 * all entries and a newline, then one stat line per listed name in the same order. The globs are
 * expanded by the shell (no argument limit, dotfiles included, `.` and `..` not); a glob that
 * matched nothing stays a literal word and is skipped by the existence test. Names are handed to
 * stat through `xargs -0`, so a directory of any size stays under the argument limit.
 */
export const LIST_SCRIPT = [
  // dash's cd names no reason: say it in the words the error mapping reads.
  'if [ ! -e "$1" ] && [ ! -L "$1" ]; then echo "$1: No such file or directory" >&2; exit 1; fi',
  'if [ ! -d "$1" ]; then echo "$1: Not a directory" >&2; exit 1; fi',
  'if ! cd -- "$1" 2>/dev/null || [ ! -r . ]; then echo "$1: Permission denied" >&2; exit 1; fi',
  "cap=$2; n=0",
  'names() { for f in .[!.]* ..?* *; do { [ -e "$f" ] || [ -L "$f" ]; } || continue; n=$((n+1)); [ "$n" -le "$cap" ] && printf "%s\\0" "$f"; done; }',
  // Run in this shell (not a pipe's subshell), so n is the count of every entry afterwards.
  "names; printf '\\0'; echo \"$n\"",
  `n=0; names | xargs -0 -r stat -c '${STAT_FORMAT}' --`
].join("\n")

/**
 * Reads `$1` from byte `$2` (0-based), at most `$3` bytes: its size (stat) on the first line,
 * then the bytes. The file is opened first so that a missing or unreadable file fails with the
 * shell's own message before anything is printed.
 */
export const READ_SCRIPT = [
  'if [ -d "$1" ]; then echo "$1: Is a directory" >&2; exit 1; fi',
  'exec 3<"$1" || exit 1',
  'size=$(stat -L -c %s -- "$1") || exit 1',
  'printf "%s\\n" "$size"',
  'tail -c +"$(($2 + 1))" <&3 | head -c "$3"'
].join("\n")

/**
 * Writes stdin to `$1` (`$2` = `a` appends), then sets mode `$3`. `mkdir -p` of the parent first
 * when `$4` = `p`. The redirection opens (and creates) the file, so its errors are the shell's.
 */
export const WRITE_SCRIPT = [
  'if [ "$4" = p ]; then mkdir -p -- "$(dirname -- "$1")" || exit 1; fi',
  'if [ -d "$1" ]; then echo "$1: Is a directory" >&2; exit 1; fi',
  'if [ "$2" = a ]; then cat >>"$1" || exit 1; else cat >"$1" || exit 1; fi',
  'chmod "$3" -- "$1"'
].join("\n")

/** Processes: procps first; busybox's ps has neither -e nor etime. */
export const PS_SCRIPT = "ps -eo pid,ppid,user,etime,args 2>/dev/null || exec ps -o pid,ppid,user,args"

/** The last `$2` lines of file `$1`. */
export const TAIL_SCRIPT = 'exec tail -n "$2" -- "$1"'

/** Whether unit/service `$1` starts at boot, per init system: exit 0 = enabled. */
export const ENABLED_SCRIPTS: Readonly<Record<string, string>> = {
  systemd: 'exec systemctl is-enabled --quiet -- "$1"',
  openrc: 'rc-update show 2>/dev/null | grep -q "^ *$1 |"'
}

/**
 * A guest-definition template as a script: `{name}` becomes `"$1"`; a template without it gets
 * `"$@"` appended. Templates may not contain single quotes (guest.toml's rule), and the value
 * only ever arrives as an argument.
 */
export const templateScript = (template: string): string =>
  template.includes("{name}") ? template.replaceAll("{name}", '"$1"') : `${template} "$@"`
