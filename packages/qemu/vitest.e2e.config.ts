import { defineConfig } from "vitest/config"

// End-to-end suites boot real tiny guests and install packed tarballs with npm; one file at a time.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.test.ts"],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    fileParallelism: false,
    disableConsoleIntercept: true
  }
})
