export { AdminRefused, CLIENTS, currentEnvironment, doctor, entryFor, install, placeOf, type ClientName, type ClientReport, type Environment, type InstallResult } from "./install.js"
export { DEFAULT_ADDRESS, down, status, up, type DaemonRecord } from "./daemon.js"
