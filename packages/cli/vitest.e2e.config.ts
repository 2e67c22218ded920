import { defineConfig } from "vitest/config"

// End-to-end suites boot the real tiny guest under QEMU; they run one file at a time.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.test.ts"],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    disableConsoleIntercept: true
  }
})
