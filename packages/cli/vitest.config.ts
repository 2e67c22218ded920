import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["test/e2e/**"],
    testTimeout: 60_000,
    disableConsoleIntercept: true
  }
})
