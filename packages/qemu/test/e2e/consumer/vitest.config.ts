import { defineConfig } from "vitest/config"

// A VM command under TCG on a busy machine can outlast vitest's 5 s default; withVm bounds its own hooks.
export default defineConfig({ test: { testTimeout: 60_000 } })
