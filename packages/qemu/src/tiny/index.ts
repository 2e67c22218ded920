export { tinyQemuArgs, type TinyQemuOptions } from "./argv.js"
export { buildTinyGuest, readTinyGuest, TINY_KERNEL_ARGS, type BuildTinyGuestOptions, type TinyGuestImage } from "./build.js"
export { qmpCommands, readConsoleFrom, TINY_SSHD_MARKER, waitForConsoleLine, waitForSshBanner, waitForTinyGuestSsh } from "./probe.js"
export { opensshEd25519ToDropbear, toDropbearKey, writeVmInitrd, type WriteVmInitrdOptions } from "./vm-initrd.js"
