// WAL checkpoints run on the store's worker thread, not inside a request's commit, and keep
// the WAL bounded; a host killed while the worker copies loses nothing it acknowledged.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import { Store } from "../src/store/db.ts";
import { waitFor } from "./helpers/home.ts";

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), "holon-ckpt-"));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const SMALL = { startBytes: 128 * 1024, backstopPages: 4096, everyMs: 5 };
const row = (i: number) => `row ${i} ` + "x".repeat(1500);

async function insertRows(store: Store, from: number, count: number): Promise<void> {
  const stmt = store.db.prepare("INSERT INTO store_stats_probe (n, text) VALUES (?, ?)");
  for (let i = from; i < from + count; i++) await store.tx(() => stmt.run(i, row(i)));
}

function walBytes(path: string): number {
  return statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

describe("WAL checkpoints", () => {
  it("run on the worker once the WAL has grown, and keep the WAL from growing with history", async () => {
    const path = join(tempDir(), "holon.db");
    const store = new Store(path, systemClock, randomIds, { checkpoint: SMALL });
    store.db.exec("CREATE TABLE store_stats_probe (n INTEGER PRIMARY KEY, text TEXT NOT NULL)");
    const auto = () =>
      (store.db.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
        .wal_autocheckpoint;
    try {
      // Before the worker: SQLite's own point.
      expect(auto()).toBe(1000);
      let n = 0;
      let largest = 0;
      // 40 bursts of 50 commits, some 3 MB each: 120 MB written in all.
      for (let burst = 0; burst < 40; burst++) {
        await insertRows(store, n, 50);
        n += 50;
        largest = Math.max(largest, walBytes(path));
        const done = store.checkpointer!.counts.worker;
        if (burst > 0) {
          await waitFor(() => store.checkpointer!.counts.worker > done, {
            what: "a worker checkpoint after the burst",
          });
        }
      }
      expect(store.checkpointer!.counts.worker).toBeGreaterThanOrEqual(39);
      // The committing connection now checkpoints only past the backstop (4,096 pages here,
      // 16 MB), which the WAL never reached: every checkpoint ran on the worker.
      expect(auto()).toBe(SMALL.backstopPages);
      expect(largest).toBeLessThan(SMALL.backstopPages * 4096);
      // The WAL started over after the worker caught up: far less than the 120 MB written.
      expect(largest).toBeLessThan(12 * 1024 * 1024);
      const count = store.db.prepare("SELECT COUNT(*) AS c FROM store_stats_probe").get() as {
        c: number;
      };
      expect(count.c).toBe(n);
    } finally {
      store.close();
    }
    // Closed cleanly: the last connection checkpointed everything and removed the WAL.
    expect(walBytes(path)).toBe(0);
    const again = new Store(path, systemClock, randomIds);
    try {
      const check = again.db.prepare("PRAGMA integrity_check").get() as {
        integrity_check: string;
      };
      expect(check.integrity_check).toBe("ok");
      expect(
        (again.db.prepare("SELECT COUNT(*) AS c FROM store_stats_probe").get() as { c: number }).c,
      ).toBe(2000);
    } finally {
      again.close();
    }
  }, 60_000);

  it("a host killed while its worker checkpoints loses no acknowledged commit", async () => {
    const dir = tempDir();
    const path = join(dir, "holon.db");
    const script = join(dir, "writer.ts");
    const src = new URL("../src/", import.meta.url).pathname;
    writeFileSync(
      script,
      `import { Store } from ${JSON.stringify(src + "store/db.ts")};
import { randomIds, systemClock } from ${JSON.stringify(src + "domain/clock.ts")};
const store = new Store(${JSON.stringify(path)}, systemClock, randomIds, { checkpoint: ${JSON.stringify(SMALL)} });
store.db.exec("CREATE TABLE IF NOT EXISTS probe (n INTEGER PRIMARY KEY, text TEXT NOT NULL)");
const stmt = store.db.prepare("INSERT INTO probe (n, text) VALUES (?, ?)");
let n = 0;
const burst = async () => {
  for (let i = 0; i < 20; i++, n++) await store.tx(() => stmt.run(n, "y".repeat(2000)));
  process.stdout.write(\`\${n - 1} \${store.checkpointer.counts.worker}\\n\`); // acknowledged
  setImmediate(burst);
};
burst();
`,
    );
    const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
    let acknowledged = -1;
    let out = "";
    await new Promise<void>((resolve, reject) => {
      child.stdout.on("data", (d: Buffer) => {
        out += d.toString();
        const lines = out.split("\n");
        out = lines.pop()!;
        for (const line of lines) {
          const [n, checkpoints] = line.split(" ").map(Number);
          acknowledged = n!;
          // Killed mid-flight once the worker has checkpointed a few times.
          if (checkpoints! >= 5 && !child.killed) {
            child.kill("SIGKILL");
            resolve();
          }
        }
      });
      child.on("exit", (code, signal) => {
        if (signal !== "SIGKILL") reject(new Error(`writer exited: ${code} ${signal}`));
      });
    });
    await new Promise((r) => child.on("exit", r));
    expect(acknowledged).toBeGreaterThan(100);
    const store = new Store(path, systemClock, randomIds);
    try {
      expect(
        (store.db.prepare("PRAGMA integrity_check").get() as { integrity_check: string })
          .integrity_check,
      ).toBe("ok");
      const max = store.db.prepare("SELECT MAX(n) AS m, COUNT(*) AS c FROM probe").get() as {
        m: number;
        c: number;
      };
      expect(max.m).toBeGreaterThanOrEqual(acknowledged);
      expect(max.c).toBe(max.m + 1);
    } finally {
      store.close();
    }
  }, 60_000);
});
