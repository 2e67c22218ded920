import { defineConfig } from "vitest/config"

// The process suites spawn the built `stoat` binary; they share the machine's two cores.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/e2e/**"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    fileParallelism: false
  }
})
