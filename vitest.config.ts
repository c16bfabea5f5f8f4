import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    // Stall bounds, not speed checks: a host start on a loaded 2-core machine running two test
    // files at once has taken over 15 s.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // The tx guard on in every test: the store rolls back an async transaction whose body
    // yields to timers or I/O before its commit (docs/architecture.md, the one rule).
    env: { HOLON_TX_GUARD: "1" },
    // Vitest's default is one worker less than the cores: a single worker on a 2-core machine,
    // which then sits idle while a test waits on the hosts and commands it spawned. Two files
    // at a time keep both cores busy; a third gained nothing measurable on a loaded 2-core
    // machine and made the timing-sensitive tests flakier.
    maxWorkers: 2,
    // A private HOME per test file: hosts seed ~/.agents/templates (docs/agents.md).
    setupFiles: ["test/helpers/isolated-home.ts"],
    // Once for the run: the web console's bundle (the console tests serve it), the package an
    // installed `holon` runs (test/perf-budget-startup.test.ts runs it), the sandbox probe
    // that the helpers put into the homes of the `holon` processes they spawn, and the
    // directory of the run's Postgres servers (test/helpers/postgres.ts: each worker starts
    // one when a test first asks for a database; the teardown stops them all). `npm test`
    // keeps every home on SQLite; `npm run test:pg` (HOLON_TEST_STORE=postgres) runs the same
    // files with every home on a database of its own.
    globalSetup: [
      "test/helpers/build-ui.ts",
      "test/helpers/build-bundle.ts",
      "test/helpers/probe-cache.ts",
      "test/helpers/postgres.ts",
    ],
  },
});
