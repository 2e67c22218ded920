export {
  buildTinyGuest,
  readTinyGuest,
  TINY_KERNEL_ARGS,
  type BuildTinyGuestOptions,
  type TinyGuestImage
} from "./build.js"
export { TINY_SSHD_MARKER } from "./guest-files.js"
export { opensshEd25519ToDropbear, toDropbearKey, writeVmInitrd, type WriteVmInitrdOptions } from "./vm-initrd.js"
