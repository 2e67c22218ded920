#!/usr/bin/env node
"use strict"
const { dirname, join } = require("node:path")
const { enableCompileCache } = require("./compile-cache.js")

// Our two bundles: the CLI's own, and the MCP server's, which `stoat mcp` loads.
enableCompileCache([join(__dirname, "../dist"), dirname(require.resolve("@stoat/mcp/bundle"))])
require("../dist/main.cjs").main(process.argv.slice(2))
