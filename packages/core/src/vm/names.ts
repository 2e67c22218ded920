import { isReservedDir } from "../platform/data-root.js"
import { InvalidSpec } from "../errors.js"
import { VM_NAME, VM_NAME_MAX } from "../platform/names.js"

const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?$/i

/** The VM name grammar, checked at create: also refuses Windows device names so a data root can move between systems. */
export const validateVmName = (name: string): InvalidSpec | undefined => {
  if (!VM_NAME.test(name)) {
    return new InvalidSpec({
      message: `invalid VM name "${name}": use letters, digits, '.', '_' or '-', starting with a letter or digit`,
      subject: name
    })
  }
  if (WINDOWS_DEVICE.test(name))
    return new InvalidSpec({ message: `invalid VM name "${name}": reserved device name`, subject: name })
  if (isReservedDir(name))
    return new InvalidSpec({
      message: `invalid VM name "${name}": reserved for the data root's own folders`,
      subject: name
    })
  if (name.length > VM_NAME_MAX)
    return new InvalidSpec({ message: `invalid VM name "${name}": at most ${VM_NAME_MAX} characters`, subject: name })
  return undefined
}

/**
 * The guest's hostname for a VM name (VM names may hold '_' and '.', and end in '-'): one
 * lower-case label of letters, digits and '-', at most 63 characters; "stoat" when nothing is left.
 */
export const guestHostname = (vmName: string): string => {
  const label = vmName
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "")
  return label === "" ? "stoat" : label
}
