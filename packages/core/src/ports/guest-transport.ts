import { Context, type Effect } from "effect"
import type { AccessDenied, CannotReach, CapabilityUnavailable, Internal, NotFound, Timeout, Usage } from "../errors.js"

/** How to reach one VM's sshd: always loopback, the VM's forwarded port. */
export interface SshTarget {
  readonly vm: string
  readonly port: number
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
    /** Reachable = TCP connect and the `SSH-` banner (user-mode NAT accepts before the guest is up). */
    readonly probe: (port: number, timeoutMs?: number) => Effect.Effect<boolean>
    /** Drops pooled connections to one VM (after stop) or to all. */
    readonly release: (vm?: string) => Effect.Effect<void>
  }
>() {}
