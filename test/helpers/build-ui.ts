// vitest globalSetup: build the web console once per run (scripts/build-ui.mjs), so every
// test that serves /ui/ serves the current sources.
export default async function setup(): Promise<void> {
  const mod = (await import("../../scripts/build-ui.mjs")) as {
    buildUi: () => Promise<{ gzipBytes: number }>;
  };
  await mod.buildUi();
}
