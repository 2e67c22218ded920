export const TOOLKIT_VERSION = "0.1.0"
