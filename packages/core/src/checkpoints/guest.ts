import { randomBytes } from "node:crypto"
import { Clock, Effect } from "effect"
import { CapabilityUnavailable, CannotReach, type Timeout } from "../errors.js"
import { GuestTransport, type SshTarget } from "../ports/guest-transport.js"
import type { GuestMount } from "./layout.js"
import { guestHostname } from "../vm/names.js"

/*
 * The guest side of a checkpoint, as POSIX sh scripts run over SSH. Values travel as positional
 * arguments (quoted by the transport), never spliced into the script. `$0` names the script, so a
 * scripted fake guest can tell them apart.
 */

/** Mounts 9p shares given as (tag, mount point, options) triples, skipping mounted ones; exit 4 naming those that failed. */
const MOUNT_TRIPLES = `failed=
while [ $# -ge 3 ]; do
  mounted=
  while read -r src dir type rest; do [ "$type" = 9p ] && [ "$dir" = "$2" ] && mounted=1; done < /proc/mounts
  [ -n "$mounted" ] || { mkdir -p "$2" && mount -t 9p -o "$3" "$1" "$2"; } || failed="$failed $2"
  shift 3
done
[ -z "$failed" ] || { echo "cannot mount:$failed" >&2; exit 4; }`

/**
 * Unmounts every 9p share (QEMU refuses to save a guest with one mounted) and prints each as
 * "tag<TAB>mount point<TAB>options". One that is busy is named on stderr with exit 3, after the
 * ones already unmounted are mounted again.
 */
const UNMOUNT_SHARES = `tab=$(printf '\\t')
list=
while read -r src dir type options rest; do
  [ "$type" = 9p ] && list="$list$src$tab$dir$tab$options
"
done < /proc/mounts
[ -n "$list" ] || exit 0
sync
done=
while IFS="$tab" read -r tag dir options; do
  [ -n "$dir" ] || continue
  if umount "$dir" 2>/dev/null; then
    done="$done$tag$tab$dir$tab$options
"
  else
    printf '%s' "$done" | while IFS="$tab" read -r t d o; do mount -t 9p -o "$o" "$t" "$d"; done
    echo "$dir" >&2
    exit 3
  fi
done <<EOF
$list
EOF
printf '%s' "$done"`

/** A fork's own identity: hostname (and machine id where the guest keeps one), then its shares. */
const FORK_IDENTITY = `h=$1
id=$2
shift 2
hostname "$h"
echo "$h" > /etc/hostname
[ -f /etc/hosts ] && sed -i "s/^127\\.0\\.1\\.1[[:space:]].*/127.0.1.1	$h/" /etc/hosts
[ -s /etc/machine-id ] && echo "$id" > /etc/machine-id
${MOUNT_TRIPLES}`

/**
 * Sets the clock to the host's time (a fork's still reads the checkpoint's): GNU date takes it to
 * the millisecond ($1), busybox date only whole seconds, so it gets it rounded ($2).
 */
const SET_CLOCK = `date -s "@$1" >/dev/null 2>&1 || date -s "@$2" >/dev/null`

const SCRIPTS = {
  "stoat-unmount-shares": UNMOUNT_SHARES,
  "stoat-mount-shares": MOUNT_TRIPLES,
  "stoat-fork-identity": FORK_IDENTITY,
  "stoat-set-clock": SET_CLOCK
} as const

export type GuestScript = keyof typeof SCRIPTS

/** A running VM's ssh target and the words that make a command root in it (from guest/root.ts `asRoot`). */
export interface RootShell {
  readonly target: SshTarget
  readonly escalate: ReadonlyArray<string>
}

/** argv for a script, run as root. */
export const scriptArgv = (shell: RootShell, script: GuestScript, args: ReadonlyArray<string>): string[] => [
  ...shell.escalate,
  "sh",
  "-c",
  SCRIPTS[script],
  script,
  ...args
]

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString("utf8")

/** Runs a script; the transport reports its true exit status or a typed error. */
const run = (shell: RootShell, script: GuestScript, args: ReadonlyArray<string>) =>
  Effect.flatMap(GuestTransport, (transport) =>
    transport.exec(shell.target, scriptArgv(shell, script, args), { timeoutMs: 30_000, maxOutputBytes: 65_536 })
  )

const triples = (mounts: ReadonlyArray<GuestMount>) => mounts.flatMap((mount) => [mount.tag, mount.dir, mount.options])

const failedScript = (
  target: SshTarget,
  what: string,
  output: { readonly exitCode: number; readonly stderr: Uint8Array }
) =>
  new CannotReach({
    message: `VM "${target.vm}": ${what} (exit ${output.exitCode}: ${text(output.stderr).trim().slice(0, 300)})`,
    subject: target.vm
  })

/** Unmounts the guest's 9p shares; a busy one is capability_unavailable naming it. */
export const unmountShares = (
  shell: RootShell
): Effect.Effect<ReadonlyArray<GuestMount>, CapabilityUnavailable | CannotReach | Timeout, GuestTransport> =>
  Effect.gen(function* () {
    const { target } = shell
    const output = yield* run(shell, "stoat-unmount-shares", [])
    if (output.exitCode === 3) {
      const dir = text(output.stderr).trim().split("\n").pop() ?? "?"
      return yield* new CapabilityUnavailable({
        message: `the share mounted at ${dir} in VM "${target.vm}" is in use (a process has files open there), and QEMU cannot save a guest with a 9p share mounted; close them and retry`,
        subject: dir,
        reason: "share_in_use"
      })
    }
    if (output.exitCode !== 0) return yield* failedScript(target, "cannot unmount its shares", output)
    return text(output.stdout)
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => {
        const [tag = "", dir = "", options = ""] = line.split("\t")
        return { tag, dir, options }
      })
  })

/**
 * Mounts shares again (the source, after its checkpoint), on a new connection: one opened before
 * the pause can lose the answer to the next command.
 */
export const mountShares = (shell: RootShell, mounts: ReadonlyArray<GuestMount>) =>
  mounts.length === 0
    ? Effect.void
    : Effect.flatMap(GuestTransport, (transport) =>
        Effect.zipRight(
          transport.release(shell.target.vm),
          Effect.flatMap(run(shell, "stoat-mount-shares", triples(mounts)), (output) =>
            output.exitCode === 0
              ? Effect.void
              : Effect.fail(failedScript(shell.target, "cannot mount its shares again", output))
          )
        )
      )

/** The host's time as `date -s @…` takes it: seconds with milliseconds (GNU date), and rounded to whole seconds (busybox). */
export const clockArgs = (epochMs: number): [string, string] => [
  `${Math.floor(epochMs / 1000)}.${String(epochMs % 1000).padStart(3, "0")}`,
  String(Math.round(epochMs / 1000))
]

/** Gives a fork its own hostname and machine id and mounts its own shares where the source had them. */
export const setForkIdentity = (shell: RootShell, mounts: ReadonlyArray<GuestMount>) =>
  Effect.flatMap(
    run(shell, "stoat-fork-identity", [
      guestHostname(shell.target.vm),
      randomBytes(16).toString("hex"),
      ...triples(mounts)
    ]),
    (output) =>
      output.exitCode === 0
        ? Effect.void
        : Effect.fail(failedScript(shell.target, "cannot take its own identity", output))
  )

/**
 * Sets the guest's clock to the host's. Run on a connection already open (after the identity
 * step), so the time read here reaches the guest within a round trip.
 */
export const setGuestClock = (shell: RootShell) =>
  Effect.flatMap(
    Effect.flatMap(Clock.currentTimeMillis, (now) => run(shell, "stoat-set-clock", clockArgs(now))),
    (output) =>
      output.exitCode === 0 ? Effect.void : Effect.fail(failedScript(shell.target, "cannot set its clock", output))
  )
