export {
  AdminRefused,
  CLIENTS,
  currentEnvironment,
  doctor,
  entryFor,
  install,
  placeOf,
  uninstall,
  type ClientName,
  type ClientReport,
  type Environment,
  type InstallResult,
  type UninstallResult
} from "./install.js"
export { DEFAULT_ADDRESS, down, status, up, type DaemonRecord } from "./daemon.js"
