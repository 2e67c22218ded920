import { Effect } from "effect"
import { CannotReach, checkHostAt, ProviderMissing } from "@stoat/core"
import { runChild } from "@stoat/qemu"

export const VIRSH = "virsh"

/** The connection a VM lives on when its vm.toml names no host: the local system daemon. */
export const DEFAULT_URI = "qemu:///system"

/** How long one virsh call may take; a remote host over ssh costs a connection per call. */
const VIRSH_TIMEOUT_MS = 120_000
/** Far beyond any domain XML or listing: more is not virsh talking to us. */
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024

export interface VirshResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * A failed virsh call whose cause is the connection, not the command: the daemon or host is
 * not there. Tagged and carrying what to do, so callers can map it into their contract.
 */
export type VirshUnavailable = ProviderMissing | CannotReach

/**
 * Why virsh could not talk to libvirt at `uri`, from its stderr, with what to do (and, as the
 * hint, `doctor --host` for that host); undefined when the connection worked and the command
 * itself failed.
 */
export const connectionProblem = (uri: string, stderr: string): CannotReach | undefined => {
  const text = stderr.replace(/\s+/g, " ")
  const reach = (message: string) => new CannotReach({ message, subject: uri, hint: checkHostAt(uri) })
  if (/virsh timed out$/.test(text.trim()) && !/error: /.test(text))
    return reach(`libvirt at ${uri} did not answer in time; check that the host is up and ssh to it works`)
  if (
    !/failed to connect to the hypervisor|Cannot recv data|End of file while reading data|unable to connect to server/i.test(
      text
    )
  )
    return undefined
  if (
    /Could not resolve hostname|No route to host|Network is unreachable|Connection timed out|Name or service not known/i.test(
      text
    )
  ) {
    return reach(`libvirt host ${uri} is unreachable (${summary(text)}); check the host name and that ssh to it works`)
  }
  if (/ssh: connect to host .*Connection refused/i.test(text)) {
    return reach(
      `ssh to libvirt host ${uri} was refused (${summary(text)}); check that sshd runs on that host and port`
    )
  }
  if (/Permission denied|Host key verification failed/i.test(text)) {
    return reach(
      `ssh to libvirt host ${uri} was refused (${summary(text)}); add your key to the host's authorized_keys and its host key to known_hosts`
    )
  }
  if (/Connection refused|No such file or directory|libvirt-sock/i.test(text)) {
    return reach(
      `libvirt at ${uri} refused the connection (${summary(text)}); start the daemon there (systemctl start libvirtd, or libvirtd -d and virtlogd -d) and check virsh -c ${uri} list`
    )
  }
  return reach(`cannot connect to libvirt at ${uri} (${summary(text)}); check virsh -c ${uri} list`)
}

const summary = (text: string) =>
  text
    .replace(/^error: /, "")
    .replace(/ error: /g, "; ")
    .trim()
    .slice(0, 300)

/**
 * Runs virsh against `uri` with an argument array (never a shell). Fails only when virsh is
 * missing or cannot reach libvirt; a command that fails otherwise is a result with its code,
 * for the caller to judge.
 */
export const virsh = (
  uri: string,
  args: ReadonlyArray<string>,
  options: { readonly timeoutMs?: number } = {}
): Effect.Effect<VirshResult, VirshUnavailable> =>
  runChild(VIRSH, ["-q", "-c", uri, ...args], {
    env: { ...process.env, LC_ALL: "C" },
    timeoutMs: options.timeoutMs ?? VIRSH_TIMEOUT_MS,
    maxBytes: MAX_OUTPUT_BYTES,
    // Over qemu+ssh:// virsh runs ssh, which a timeout must end too.
    killGroup: true
  }).pipe(
    Effect.map(
      (exit): VirshResult => ({
        code: exit.code ?? 1,
        stdout: exit.stdout.toString("utf8"),
        stderr: exit.timedOut ? `${exit.stderr}\nvirsh timed out` : exit.stderr
      })
    ),
    Effect.catchAll((failure) =>
      failure.missing
        ? Effect.fail(
            new ProviderMissing({
              message: `${VIRSH} not found on PATH; install libvirt's client (apt-get install libvirt-clients) or use --provider qemu`
            })
          )
        : Effect.succeed({ code: 1, stdout: "", stderr: failure.message })
    ),
    Effect.flatMap((result) => {
      const problem = result.code === 0 ? undefined : connectionProblem(uri, result.stderr)
      return problem === undefined ? Effect.succeed(result) : Effect.fail(problem)
    })
  )

/** The first line of virsh's error, without its "error: " prefix. */
export const virshError = (result: VirshResult): string =>
  result.stderr
    .split("\n")
    .map((line) => line.replace(/^error: /, "").trim())
    .filter((line) => line !== "")
    .join("; ")
    .slice(0, 500) || `virsh exit ${result.code}`

/** virsh says so when the domain named does not exist (a transient domain that stopped is gone). */
export const isNoDomain = (result: VirshResult): boolean =>
  /failed to get domain|Domain not found|no domain with matching name/i.test(result.stderr)
