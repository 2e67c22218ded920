import { defineConfig } from "tsdown"

// One minified JS-only bundle of the server for `stoat mcp`: without it Node loads the effect
// barrel and every @stoat module file by file, which triples the time to the first `initialize`
// answer; minified, a fifth less is parsed. The HTTP transport and the ssh2 transport stay
// separate chunks, loaded on first use.
export default defineConfig({
  entry: { serve: "src/serve.ts" },
  outDir: "dist/bundle",
  // CommonJS without `import()`, like the CLI's bundle: the CLI's bin runs both through V8's code cache.
  format: "cjs",
  outputOptions: { dynamicImportInCjs: false },
  platform: "node",
  target: "node20",
  fixedExtension: false,
  dts: false,
  sourcemap: true,
  minify: true,
  clean: true,
  deps: {
    alwaysBundle: [/^@stoat\//, "effect", "smol-toml", /^@modelcontextprotocol\//],
    neverBundle: ["better-sqlite3", "ssh2", "cpu-features"],
    onlyBundle: false
  }
})
