/**
 * The text of a tool result: stdout, then a `stderr:` section if there was any, then an
 * `exit code: N` line if the exit code is not 0. `(no output)` stands in for no output at all.
 */
export const resultText = (stdout: string, stderr: string, exitCode: number): string => {
  const sections: string[] = []
  if (stdout === "" && stderr === "") sections.push("(no output)")
  if (stdout !== "") sections.push(stdout)
  if (stderr !== "") sections.push(`stderr:\n${stderr}`)
  if (exitCode !== 0) sections.push(`exit code: ${exitCode}`)
  let text = ""
  for (const section of sections) text += text === "" || text.endsWith("\n") ? section : `\n${section}`
  return text
}

/** `300000` → `300`, `1500` → `1.5`: the timeout as the message shows it. */
export const seconds = (ms: number): string => String(Math.round(ms) / 1000)
