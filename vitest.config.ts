import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // A private HOME per test file: hosts seed ~/.agents/templates (docs/agents.md).
    setupFiles: ["test/helpers/isolated-home.ts"],
    // The web console's bundle, built once for the run (the console tests serve it).
    globalSetup: ["test/helpers/build-ui.ts"],
  },
});
