/**
 * The prelude prepended to every sh recipe and health check: shell functions generated from the
 * guest definition, so one recipe body runs on every distro.
 */
import type { Guest } from "@stoat/wire"
import { quoteWord } from "../ssh/quote.js"

type GuestDefinition = Pick<Guest, "name" | "init" | "pkg" | "svc" | "cmd" | "escalate">

/** A template as a function body: `{name}` becomes `"$1"`; without it the arguments are appended. */
const templateBody = (template: string): string =>
  template.includes("{name}") ? template.replaceAll("{name}", '"$1"') : `${template} "$@"`

const missing = (fn: string, guest: string) =>
  `echo ${quoteWord(`${fn}: guest ${guest} defines no such command`)} >&2; return 127`

const fn = (name: string, body: string) => `${name}() { ${body}; }`

export const renderPrelude = (guest: GuestDefinition): string => {
  const lines = ["# stoat prelude: generated from the guest definition"]
  lines.push(fn("stoat_pkg_setup", guest.pkg.setup.trim() === "" ? ":" : guest.pkg.setup))
  lines.push(
    fn(
      "stoat_pkg_install",
      guest.pkg.install.length === 0
        ? missing("stoat_pkg_install", guest.name)
        : `${guest.pkg.install.map(quoteWord).join(" ")} "$@"`
    )
  )
  for (const verb of ["enable", "start", "stop", "restart", "status"] as const) {
    const template = guest.svc[verb]
    lines.push(
      fn(
        `stoat_svc_${verb}`,
        template.trim() === "" ? missing(`stoat_svc_${verb}`, guest.name) : templateBody(template)
      )
    )
  }
  for (const command of ["download", "useradd"] as const) {
    const template = guest.cmd[command]
    lines.push(
      fn(
        `stoat_${command}`,
        template === undefined || template.trim() === ""
          ? missing(`stoat_${command}`, guest.name)
          : templateBody(template)
      )
    )
  }
  // Health checks run as the ssh user; stoat_escalate lets one ask for root the guest's way.
  const escalate =
    guest.escalate.length === 0
      ? '"$@"'
      : `if [ "$(id -u)" = 0 ]; then "$@"; else ${guest.escalate.map(quoteWord).join(" ")} "$@"; fi`
  lines.push(fn("stoat_escalate", escalate))
  for (const [name, value] of Object.entries(guest.pkg.env).sort(([a], [b]) => a.localeCompare(b)))
    lines.push(`export ${name}=${quoteWord(value)}`)
  const manager = guest.pkg.install[0] ?? ""
  lines.push(
    `export STOAT_OS=${quoteWord(guest.name)} STOAT_INIT=${quoteWord(guest.init)} STOAT_PKGMGR=${quoteWord(manager.split("/").pop() ?? "")}`
  )
  return `${lines.join("\n")}\n`
}
