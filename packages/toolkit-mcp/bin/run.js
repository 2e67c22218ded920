#!/usr/bin/env node
const { main } = await import("../dist/main.js")
await main(process.argv.slice(2))
