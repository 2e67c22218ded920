/** Process-wide CLI mode, decided by main before oclif parses anything. */
export const cliState = { json: false, cmd: "" }
