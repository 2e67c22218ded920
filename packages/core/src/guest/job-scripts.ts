/**
 * The constant guest shell bodies behind background jobs. Tool input (argv, the job folder, the
 * working directory, a signal name) reaches them only as positional parameters: the script text
 * never changes, so nothing a caller sends becomes shell syntax.
 */

/** Where a job's files live on the guest: `out`, `err`, `pid` (at launch) and `exit` (on completion). */
export const JOBS_DIR = "/run/stoat/jobs"
export const jobDir = (id: string, base = JOBS_DIR): string => `${base}/${id}`

/**
 * The launcher's last word. dropbear may close the session of a command that left a background
 * process without sending its exit status (the client then sees none); this line says the
 * wrapper was started all the same.
 */
export const LAUNCHED = "stoat-job-launched"

/** Launcher exit codes that mean the job never started (anything else is a shell failure). */
export const LAUNCH_NO_DIR = 90
export const LAUNCH_NO_CWD = 91

/**
 * Runs in the background: starts argv in its own session (setsid when the guest has it) with
 * stdout/stderr in the job folder, records its pid, waits, and records its exit status. Both
 * files are written to a temp name and renamed, so a reader never sees half a number.
 * `$1` = job folder, the rest = argv.
 */
export const JOB_WRAPPER = [
  "d=$1; shift",
  // Under setsid argv runs through `sh -c '"$@"'`: setsid would read a leading `-x` word as its own option.
  `if command -v setsid >/dev/null 2>&1; then setsid sh -c '"$@"' stoat_run "$@" </dev/null >"$d/out" 2>"$d/err" & else "$@" </dev/null >"$d/out" 2>"$d/err" & fi`,
  "p=$!",
  'echo "$p" >"$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"',
  'wait "$p"; s=$?',
  'echo "$s" >"$d/exit.tmp" && mv "$d/exit.tmp" "$d/exit"'
].join("\n")

/**
 * Runs in the foreground of the ssh exec and returns at once: makes the job folder, enters the
 * working directory, and leaves the wrapper running detached from the session (HUP ignored, its
 * own session, no descriptor tied to the channel), so the job outlives the call.
 * `$1` = wrapper body, `$2` = job folder, `$3` = working directory or "", the rest = argv.
 */
export const JOB_LAUNCHER = [
  "w=$1; d=$2; c=$3; shift 3",
  `mkdir -p "$d" || exit ${LAUNCH_NO_DIR}`,
  `if [ -n "$c" ]; then cd "$c" || exit ${LAUNCH_NO_CWD}; fi`,
  "trap '' HUP",
  "s=; command -v setsid >/dev/null 2>&1 && s=setsid",
  '$s sh -c "$w" stoat_job "$d" "$@" </dev/null >/dev/null 2>&1 &',
  `echo ${LAUNCHED}`
].join("\n")

/**
 * One line per job folder in `$@`: `<folder exists 0|1>\t<pid alive 0|1>\t<pid|->\t<exit|->`.
 * Liveness is read before `exit`, so a job that ends in between reads as exited, never unknown.
 * A pid file that is not a plain number is ignored (`kill -0 -1` would probe every process).
 */
export const JOB_FACTS = [
  'for d in "$@"; do',
  '  h=0; [ -d "$d" ] && h=1',
  '  p=$(cat "$d/pid" 2>/dev/null); case $p in ""|*[!0-9]*) p= ;; esac',
  '  a=0; [ -n "$p" ] && kill -0 "$p" 2>/dev/null && a=1',
  '  e=$(cat "$d/exit" 2>/dev/null); case $e in ""|*[!0-9]*) e= ;; esac',
  '  printf \'%s\\t%s\\t%s\\t%s\\n\' "$h" "$a" "${p:--}" "${e:--}"',
  "done"
].join("\n")

/** Exit code of JOB_SIGNAL when `kill` refused the signal name. */
export const SIGNAL_REFUSED = 92

/** Exit code of JOB_SIGNAL when the job's process was already gone. */
export const SIGNAL_NO_PROCESS = 93

/**
 * Sends signal `$2` to the job whose pid file is in folder `$1`: to its whole process group (the
 * job leads its own session when the guest has setsid, so its children get it too), else to the
 * pid alone. The name is checked first so a name the guest does not know is told apart from a
 * job that just ended. Written `kill -SIG -PID`: the one spelling of a group signal that both
 * dash and busybox take (dash reads `-s SIG -PID` as options, busybox has no `--`).
 */
export const JOB_SIGNAL = [
  // `trap` knows the same names as `kill` and says so portably (dash's `kill -l NAME` does not exist).
  `( trap '' "$2" ) 2>/dev/null || exit ${SIGNAL_REFUSED}`,
  `p=$(cat "$1/pid" 2>/dev/null); case $p in ""|*[!0-9]*) exit ${SIGNAL_NO_PROCESS} ;; esac`,
  `kill -"$2" "-$p" 2>/dev/null || kill -"$2" "$p" 2>/dev/null || exit ${SIGNAL_NO_PROCESS}`
].join("\n")
