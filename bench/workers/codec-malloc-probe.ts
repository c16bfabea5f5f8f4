// Where does the host's native (malloc) heap go when it reads history? This decodes (or
// encodes) 10,000 compressed record bodies a round through the store's codec, collects
// garbage twice after each round and prints glibc's main heap (`[heap]`: native memory, with
// the launcher's one malloc arena) beside V8's external memory.
//
//   MALLOC_ARENA_MAX=1 MALLOC_TRIM_THRESHOLD_=131072 MALLOC_MMAP_THRESHOLD_=131072 \
//     node --expose-gc bench/workers/codec-malloc-probe.ts decode|encode [rounds]
//
// What it showed (Node 24, issue 35's follow-up): with V8's default flags `decode` took the
// heap from 4 to 125 MB in four rounds and kept it there; with the host's flags
// (--max-semi-space-size=2 --max-old-space-size=512) from 4 to 21 MB. Every `inflateRawSync`
// builds its own zlib stream whose native state lives until V8 collects the wrapper, and what
// is freed then is left as holes glibc cannot trim. `encode`, which reuses one deflate handle
// (codec.ts), stayed at 4 MB; a reused inflate handle, tried the same way, stayed at 8 MB.
// codec.ts now reads through one reused inflate handle too: `decode` stays at 6.6 MB with the
// host's flags and 7-8 MB with V8's defaults.
import { readFileSync } from "node:fs";
import { bodyText, encodeText } from "../../src/store/codec.ts";

const mode = process.argv[2] ?? "decode";
const rounds = Number(process.argv[3] ?? 15);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");

function mallocMb(): number {
  const smaps = readFileSync("/proc/self/smaps", "utf8");
  const at = smaps.indexOf(" [heap]\n");
  if (at < 0) return 0;
  return Number(/^Rss:\s+(\d+) kB/m.exec(smaps.slice(at))?.[1] ?? 0) / 1024;
}

const row = (i: number) =>
  JSON.stringify({
    kind: "failure",
    text: `failure ${i}: ${"z".repeat(200)}`,
    created_at: new Date(0).toISOString(),
  });
const stored = Array.from({ length: 10_000 }, (_, i) => encodeText(row(i)));
gc();
gc();
console.log(`${mode}: start, malloc ${mallocMb().toFixed(1)} MB`);
for (let r = 1; r <= rounds; r++) {
  let chars = 0;
  if (mode === "decode") for (const s of stored) chars += bodyText(s).length;
  else for (let i = 0; i < stored.length; i++) chars += encodeText(row(i + r)).length;
  gc();
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  const external = process.memoryUsage().external / 2 ** 20;
  console.log(
    `round ${String(r).padStart(2)}  malloc ${mallocMb().toFixed(1).padStart(6)} MB  external ${external.toFixed(1)} MB  (${chars} chars)`,
  );
}
