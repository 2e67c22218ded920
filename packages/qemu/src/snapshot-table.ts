import type { Snapshot } from "@stoat/wire"

const DATE = /^\d{4}-\d{2}-\d{2}$/
const TIME = /^\d{2}:\d{2}:\d{2}$/
const UNIT = /^(B|KiB|MiB|GiB|TiB|PiB|EiB)$/
const ZERO_CLOCK = /^0+:00:00(\.0+)?$/

const UNIT_POWER: Record<string, number> = { B: 0, K: 1, M: 2, G: 3, T: 4, P: 5, E: 6 }

/** "0 B", "1.5 MiB", or the older unit-glued "1.2M" / "0" → bytes (rounded; the display is already rounded). */
export const parseDisplaySize = (text: string): number => {
  const match = /^(\d+(?:\.\d+)?)\s*([BKMGTPE])?(?:i?B)?$/i.exec(text.trim())
  if (!match) return 0
  const power = UNIT_POWER[(match[2] ?? "B").toUpperCase()] ?? 0
  return Math.round(Number(match[1]) * 1024 ** power)
}

/** qemu-img and HMP print local time; the wire wants RFC3339 UTC. */
const toRfc3339 = (date: string, time: string): string => {
  const [y, mo, d] = date.split("-").map(Number)
  const [h, mi, s] = time.split(":").map(Number)
  const local = new Date(y ?? 0, (mo ?? 1) - 1, d ?? 1, h ?? 0, mi ?? 0, s ?? 0)
  return local.toISOString().replace(/\.\d{3}Z$/, "Z")
}

/**
 * Parses the snapshot table printed by `qemu-img snapshot -l` and by HMP `info snapshots`
 * (`ID TAG VM SIZE DATE VM CLOCK ICOUNT`). Rows are found by their YYYY-MM-DD column rather
 * than by position: IDs may be `--` (running VMs), ICOUNT may be blank, older QEMUs glue the
 * size unit to the number. Headers and notes ("List of snapshots…", "There is no snapshot…")
 * have no date column and are skipped.
 *
 * `vm_state` says whether the VM was running when the snapshot was taken: QEMU records the
 * guest clock then, and qemu-img on a stopped disk records zero.
 */
export const parseSnapshotTable = (text: string): Snapshot[] => parseSnapshotRows(text).map((row) => row.snapshot)

/** The rows with QEMU's snapshot ids (`--` from HMP on a running VM); qemu-img -a resolves ids before tags. */
export const parseSnapshotRows = (text: string): Array<{ readonly id: string; readonly snapshot: Snapshot }> => {
  const rows: Array<{ readonly id: string; readonly snapshot: Snapshot }> = []
  for (const line of text.split(/\r?\n/)) {
    const fields = line.trim().split(/\s+/)
    const at = fields.findIndex((field, index) => index >= 3 && DATE.test(field) && TIME.test(fields[index + 1] ?? ""))
    if (at < 0) continue
    const date = fields[at] ?? ""
    const time = fields[at + 1] ?? ""
    const clock = fields[at + 2] ?? ""
    // The size is "N UNIT" (two fields) on current QEMUs, one field on old ones; the tag sits between the id and it.
    const sizeFields = UNIT.test(fields[at - 1] ?? "") ? 2 : 1
    const tag = fields.slice(1, at - sizeFields).join(" ")
    if (tag === "") continue
    const sizeDisplay = fields.slice(at - sizeFields, at).join(" ")
    rows.push({
      id: fields[0] ?? "",
      snapshot: {
        tag,
        vm_state: clock === "" || ZERO_CLOCK.test(clock) ? "stopped" : "running",
        size_display: sizeDisplay,
        created_display: `${date} ${time}`,
        created: toRfc3339(date, time),
        size_bytes: parseDisplaySize(sizeDisplay)
      }
    })
  }
  return rows
}
