import { createServer } from "node:net"
import { InvalidSpec } from "../errors.js"
import type { VmRecord } from "./store.js"

export const FIRST_SSH_PORT = 2200

/** Whether nothing else on this host listens on the loopback port right now. */
export const isBindable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resolve(true)))
  })

/** Every host port a VM claims: its ssh port (broken VMs keep theirs) and its forwards. */
export const claimedPorts = (
  records: ReadonlyArray<VmRecord>
): Map<number, { vm: string; what: "ssh port" | "forward" }> => {
  const claimed = new Map<number, { vm: string; what: "ssh port" | "forward" }>()
  for (const record of records) {
    if (record.kind === "broken") {
      if (record.sshport !== undefined) claimed.set(record.sshport, { vm: record.name, what: "ssh port" })
      continue
    }
    claimed.set(record.config.sshport, { vm: record.name, what: "ssh port" })
    for (const forward of record.config.forwards) claimed.set(forward.hostport, { vm: record.name, what: "forward" })
  }
  return claimed
}

/** First port from 2200 that no VM claims and that binds on loopback. Call under the data-root lock. */
export const allocateSshPort = async (records: ReadonlyArray<VmRecord>): Promise<number> => {
  const claimed = claimedPorts(records)
  for (let port = FIRST_SSH_PORT; port < 65536; port++) {
    if (!claimed.has(port) && (await isBindable(port))) return port
  }
  throw new Error("no free loopback port for ssh")
}

/** Parses and validates `HOST:GUEST` pairs against every other VM's ports. */
export const validateForwards = (
  vm: string,
  ownSshPort: number,
  pairs: ReadonlyArray<string>,
  records: ReadonlyArray<VmRecord>
): { hostport: number; guestport: number }[] | InvalidSpec => {
  const claimed = claimedPorts(records.filter((record) => record.name !== vm))
  const seen = new Set<number>()
  const result: { hostport: number; guestport: number }[] = []
  for (const pair of pairs) {
    const match = /^(\d{1,5}):(\d{1,5})$/.exec(pair)
    const host = Number(match?.[1])
    const guest = Number(match?.[2])
    const bad = (why: string) => new InvalidSpec({ message: `forward "${pair}": ${why}`, subject: pair })
    if (!match) return bad("expected HOST:GUEST, like 8080:80")
    if (host < 1 || host > 65535 || guest < 1 || guest > 65535) return bad("ports must be 1-65535")
    if (host < 1024) return bad("host port must be 1024 or higher")
    if (seen.has(host)) return bad(`host port ${host} is listed twice`)
    if (host === ownSshPort) return bad(`host port ${host} is this VM's ssh port`)
    const owner = claimed.get(host)
    if (owner) return bad(`host port ${host} is VM "${owner.vm}"'s ${owner.what}`)
    seen.add(host)
    result.push({ hostport: host, guestport: guest })
  }
  return result
}
