// Loaded into the host under test with `node --import`: once a second it writes the host's
// own memory figures (process.memoryUsage()) to $HOLON_BENCH_PROBE, so a benchmark can
// sample the V8 heap without any endpoint in the product. The timer never keeps the host up.
// Plain JavaScript on purpose: a .ts probe, imported before bin/holon.js switches the compile
// cache on, makes Node load its TypeScript stripper into the host (some 13 MB of RSS that
// the host under test would not otherwise have).
import { renameSync, writeFileSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

const file = process.env.HOLON_BENCH_PROBE;
if (file) {
  const write = () => {
    const m = process.memoryUsage();
    // Per V8 space: committed and resident MB (for reading by hand when RSS surprises).
    const spaces = Object.fromEntries(
      getHeapSpaceStatistics().map((s) => [
        s.space_name,
        [s.space_size, s.physical_space_size, s.space_used_size].map(
          (b) => Math.round(b / 1e5) / 10,
        ),
      ]),
    );
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, JSON.stringify({ at: Date.now(), ...m, spaces }));
    renameSync(tmp, file);
  };
  setInterval(write, 1_000).unref();
}
