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
for (const extra of ["main", "engine/worker", "mcp/tool-worker"]) entries[extra] = `src/${extra}.ts`

export default defineConfig({
  entry: entries,
  outDir: "dist",
  format: "esm",
  platform: "node",
  target: "node20",
  fixedExtension: false,
  dts: false,
  sourcemap: true,
  clean: true,
  deps: {
    alwaysBundle: [/^@stoat\//, "effect", "smol-toml"],
    neverBundle: ["@oclif/core", "better-sqlite3", "ssh2", "cpu-features", /^@modelcontextprotocol\//],
    onlyBundle: false
  }
})
