// Loaded into the host under test with `node --import`: once a second it writes the host's
// own memory figures (process.memoryUsage()) to $HOLON_BENCH_PROBE, so a benchmark can
// sample the V8 heap without any endpoint in the product. The timer never keeps the host up.
import { renameSync, writeFileSync } from "node:fs";

const file = process.env.HOLON_BENCH_PROBE;
if (file) {
  const write = () => {
    const m = process.memoryUsage();
    const tmp = `${file}.tmp`;
    writeFileSync(tmp, JSON.stringify({ at: Date.now(), ...m }));
    renameSync(tmp, file);
  };
  setInterval(write, 1_000).unref();
}
