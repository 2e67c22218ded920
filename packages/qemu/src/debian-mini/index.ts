export {
  buildDebianMini,
  checkBuildHost,
  DEBIAN_MINI_ID,
  DebianMiniBuildError,
  readDebianMini,
  type BuildDebianMiniOptions,
  type DebianMiniImage
} from "./build.js"
export {
  DEBIAN_MINI_KERNEL_ARGS,
  GUEST_USER,
  debianSources,
  guestAptSources,
  mmdebstrapArgs,
  primaryMirror
} from "./recipe.js"
