#!/usr/bin/env node
"use strict"
const { dirname, join, sep } = require("node:path")

const argv = process.argv.slice(2)
// `stoat -v` runs one small file: setting the code cache up would cost more than it saves.
if (argv[0] !== "-v" && argv[0] !== "--version") {
  // Our two bundles (the CLI's own, and the MCP server's, which `stoat mcp` loads) and the packages
  // they require (oclif, ssh2, …), wherever the package manager put them.
  const dependencies = require.resolve("@oclif/core").split(`${sep}node_modules${sep}`)[0] + `${sep}node_modules`
  require("./compile-cache.js").enableCompileCache([
    join(__dirname, "../dist"),
    dirname(require.resolve("@stoat/mcp/bundle")),
    dependencies
  ])
}
require("../dist/main.cjs").main(argv)
