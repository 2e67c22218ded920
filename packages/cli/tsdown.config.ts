import { readdirSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { defineConfig } from "tsdown"

// One bundle entry per command file so oclif's manifest can point at each; shared code lands in chunks.
const entries: Record<string, string> = {}
const walk = (dir: string): void => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path)
    else if (name.endsWith(".ts") && !name.endsWith(".test.ts"))
      entries[relative("src", path).replace(/\.ts$/, "")] = path
  }
}
walk("src/commands")
for (const extra of ["main", "fast-paths"]) entries[extra] = `src/${extra}.ts`

export default defineConfig({
  entry: entries,
  outDir: "dist",
  // CommonJS, so bin/compile-cache.js can hand V8 its cached code for every chunk; no `import()` may
  // remain (see there), hence external dynamic imports become `require`.
  format: "cjs",
  outputOptions: { dynamicImportInCjs: false },
  platform: "node",
  target: "node20",
  fixedExtension: false,
  dts: false,
  sourcemap: true,
  // Start-up is parse time: minified chunks cut what every command pays before it runs (P3, P4, P10).
  minify: true,
  clean: true,
  // jsonc-parser ships UMD whose relative requires a bundler cannot follow: Node loads it as is.
  deps: {
    alwaysBundle: [/^@stoat\//, "effect", "smol-toml"],
    neverBundle: ["@oclif/core", "better-sqlite3", "ssh2", "cpu-features", /^@modelcontextprotocol\//, "jsonc-parser"],
    onlyBundle: false
  }
})
