import { Context, type Effect } from "effect"
import type { AccessDenied, CannotReach, CapabilityUnavailable, Internal, NotFound, Timeout, Usage } from "../errors.js"

/**
 * The host whose loopback holds a VM's forwarded ssh port when that is not this machine (a
 * libvirt host over qemu+ssh://). It is reached with OpenSSH's own client (`ssh -W`), so the
 * user's ~/.ssh/config, agent, keys, ProxyJump and known_hosts apply as they do for virsh.
 */
export interface SshJump {
  readonly host: string
  readonly user?: string
  readonly port?: number
  /** A key to offer besides the user's own (a libvirt URI's `keyfile=`). */
  readonly identityFile?: string
  /** Accept the host's key unchecked (a libvirt URI's `no_verify=1`, as libvirt itself then does). */
  readonly noVerify?: boolean
}

/** Where a VM's sshd answers: the forwarded port on loopback, this machine's or, with `jump`, that host's. */
export interface SshEndpoint {
  readonly port: number
  readonly jump?: SshJump
}

/** How to reach one VM's sshd. */
export interface SshTarget extends SshEndpoint {
  readonly vm: string
  readonly user: string
  readonly privateKeyPath: string
}

export interface ExecOptions {
  readonly stdin?: string | Uint8Array
  readonly timeoutMs?: number
  /** Per stream; output beyond it is dropped and `truncated` set. */
  readonly maxOutputBytes?: number
  /** Absolute guest directory to run in. */
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  /** Called with output as it arrives (apply logs, `stoat exec` streaming). */
  readonly onStdout?: (chunk: Uint8Array) => void
  readonly onStderr?: (chunk: Uint8Array) => void
}

export interface ExecOutput {
  readonly exitCode: number
  readonly stdout: Uint8Array
  readonly stderr: Uint8Array
  readonly timedOut: boolean
  readonly truncated: boolean
}

/**
 * What an SFTP call can fail with: `capability_unavailable` (reason `sftp`) when the guest has no
 * SFTP server, `usage` for a directory where a file was meant.
 */
export type SftpError = CannotReach | NotFound | AccessDenied | CapabilityUnavailable | Usage | Internal

/**
 * The port through which core reaches into a guest. Commands are argv arrays, quoted for the
 * guest shell by the transport: tool input never becomes shell syntax.
 */
export class GuestTransport extends Context.Tag("stoat/GuestTransport")<
  GuestTransport,
  {
    readonly exec: (
      target: SshTarget,
      argv: ReadonlyArray<string>,
      options?: ExecOptions
    ) => Effect.Effect<ExecOutput, CannotReach | Timeout>
    readonly readFile: (
      target: SshTarget,
      path: string,
      options?: { readonly offset?: number; readonly maxBytes?: number }
    ) => Effect.Effect<{ readonly data: Uint8Array; readonly size: number }, SftpError>
    readonly writeFile: (
      target: SshTarget,
      path: string,
      data: Uint8Array,
      options?: { readonly mode?: number; readonly append?: boolean }
    ) => Effect.Effect<void, SftpError>
    readonly upload: (target: SshTarget, localPath: string, remotePath: string) => Effect.Effect<void, SftpError>
    readonly download: (target: SshTarget, remotePath: string, localPath: string) => Effect.Effect<void, SftpError>
    /**
     * Reachable = TCP connect and the `SSH-` banner (user-mode NAT accepts before the guest is up);
     * with `jump`, the connection is made on that host.
     */
    readonly probe: (port: number, timeoutMs?: number, jump?: SshJump) => Effect.Effect<boolean>
    /** Drops pooled connections to one VM (after stop) or to all. */
    readonly release: (vm?: string) => Effect.Effect<void>
  }
>() {}
