import { spawnSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** libvirt's own schema check (virt-xml-validate ships with libvirt-clients): what virsh create would accept. */
export const validate = (xml: string) => {
  const file = join(mkdtempSync(join(tmpdir(), "stoat-libvirt-xml-")), "domain.xml")
  writeFileSync(file, xml)
  const run = spawnSync("virt-xml-validate", [file, "domain"], { encoding: "utf8" })
  if (run.error !== undefined)
    throw new Error(
      `virt-xml-validate is required by these tests (apt-get install libvirt-clients): ${run.error.message}`
    )
  return `${run.stdout}${run.stderr}`
}
