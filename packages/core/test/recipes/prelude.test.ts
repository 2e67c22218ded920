import { spawnSync } from "node:child_process"
import { describe, expect, it } from "vitest"
import { BUNDLED_GUESTS } from "../../src/guest-definitions/definitions.js"
import { renderPrelude } from "../../src/recipes/prelude.js"

const guest = (name: string) => {
  const found = BUNDLED_GUESTS.find((g) => g.name === name)
  if (!found) throw new Error(name)
  return found
}

/** Runs the prelude plus a few lines in the host's sh, as the guest would. */
const sh = (prelude: string, script: string) => {
  const run = spawnSync("sh", ["-s"], { input: `${prelude}${script}\n`, encoding: "utf8" })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

describe("the prelude", () => {
  it("is generated from the guest definition (debian)", () => {
    expect(renderPrelude(guest("debian")).split("\n")).toEqual([
      "# stoat prelude: generated from the guest definition",
      "stoat_pkg_setup() { apt-get update; }",
      `stoat_pkg_install() { 'apt-get' 'install' '-y' "$@"; }`,
      `stoat_svc_enable() { systemctl enable "$1"; }`,
      `stoat_svc_start() { systemctl start "$1"; }`,
      `stoat_svc_stop() { systemctl stop "$1"; }`,
      `stoat_svc_restart() { systemctl restart "$1"; }`,
      `stoat_svc_status() { systemctl status "$1"; }`,
      `stoat_download() { curl -fsSL -o "$@"; }`,
      `stoat_useradd() { useradd -m -s /bin/bash "$1"; }`,
      `stoat_escalate() { if [ "$(id -u)" = 0 ]; then "$@"; else 'sudo' '-n' "$@"; fi; }`,
      "export DEBIAN_FRONTEND='noninteractive'",
      "export STOAT_OS='debian' STOAT_INIT='systemd' STOAT_PKGMGR='apt-get'",
      ""
    ])
  })

  it("alpine: openrc templates, the retrying setup, apk as manager", () => {
    const text = renderPrelude(guest("alpine"))
    expect(text).toContain(`stoat_svc_enable() { rc-update add "$1" default; }`)
    expect(text).toContain("stoat_pkg_setup() { i=0; until setup-apkrepos -c -1;")
    expect(text).toContain(`stoat_pkg_install() { 'apk' '--wait' '60' 'add' "$@"; }`)
    expect(text).toContain("STOAT_PKGMGR='apk'")
  })

  it("is valid sh whose functions call the templates with their arguments", () => {
    const fake = {
      ...guest("tiny"),
      pkg: { setup: "echo setup", install: ["echo", "install"], env: { PKG_HOME: "it's here" }, runtime_packages: {} },
      svc: {
        enable: "echo enable {name} now",
        start: "echo start",
        stop: "echo stop",
        restart: "echo restart",
        status: "echo status"
      },
      cmd: { download: "echo get", useradd: "echo add {name}" }
    }
    const run = sh(
      renderPrelude(fake),
      'stoat_pkg_setup; stoat_pkg_install a "b c"; stoat_svc_enable web; stoat_svc_start web; stoat_download /o "u v"; stoat_useradd dev; echo "$PKG_HOME|$STOAT_OS|$STOAT_PKGMGR"'
    )
    expect(run).toEqual({
      code: 0,
      stdout: "setup\ninstall a b c\nenable web now\nstart web\nget /o u v\nadd dev\nit's here|tiny|echo\n",
      stderr: ""
    })
  })

  it("a guest without a package manager or services (tiny): setup is a no-op, the rest fail with a reason", () => {
    const prelude = renderPrelude(guest("tiny"))
    expect(sh(prelude, "stoat_pkg_setup && echo ok")).toMatchObject({ code: 0, stdout: "ok\n" })
    const install = sh(prelude, "stoat_pkg_install curl")
    expect(install.code).toBe(127)
    expect(install.stderr).toContain("stoat_pkg_install: guest tiny defines no such command")
    expect(sh(prelude, "stoat_svc_start web").code).toBe(127)
    expect(sh(prelude, "stoat_escalate echo root").stdout).toBe("root\n")
  })
})
