/** Process-wide CLI mode, decided by main before oclif parses anything. */
export const cliState: { json: boolean; cmd: string; guest: string[] | undefined } = {
  json: false,
  cmd: "",
  guest: undefined
}
