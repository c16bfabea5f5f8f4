// Many processes printing at once: every output file is complete, and the host's memory does
// not grow with the output (it never passes through the host).
import { afterAll, describe, expect, it } from "vitest";
import { statSync } from "node:fs";
import { join } from "node:path";
import { startProcess, waitForExit } from "../src/tasks/process.ts";
import { readPreview } from "../src/tasks/output-preview.ts";
import { cleanupDirs, tempDir } from "./fixtures/process/util.ts";

afterAll(cleanupDirs);

const N = 200_000;
// bytes of `seq 1 N`: each number's digits plus a newline
const seqBytes = (n: number) => {
  let total = 0;
  for (let d = 1, lo = 1; lo <= n; d++, lo *= 10)
    total += (Math.min(n, lo * 10 - 1) - lo + 1) * (d + 1);
  return total;
};

describe("process concurrency", () => {
  it("20 concurrent processes printing continuously lose no output; host RSS stays bounded", async () => {
    const root = tempDir();
    const before = process.memoryUsage().rss;
    const handles = await Promise.all(
      Array.from(
        { length: 20 },
        async (_, i) =>
          await startProcess({
            cmd: `seq 1 ${N}; seq 1 ${N} >&2`,
            cwd: root,
            dir: join(root, `p${i}`),
          }),
      ),
    );
    const statuses = await Promise.all(handles.map((h) => waitForExit(h, { timeoutMs: 30_000 })));
    const grown = process.memoryUsage().rss - before;
    for (const [i, h] of handles.entries()) {
      expect(statuses[i]).toMatchObject({ exit_code: 0 });
      expect(statSync(h.stdout_path).size).toBe(seqBytes(N));
      expect(statSync(h.stderr_path!).size).toBe(seqBytes(N));
      const p = readPreview(h.stdout_path, { headBytes: 8, tailBytes: 14 });
      expect(p.head).toBe("1\n2\n3\n4\n");
      expect(p.tail).toBe("199999\n200000\n");
    }
    // 20 x 2 x 1.3 MB went to files; the host holds none of it
    expect(grown).toBeLessThan(20 * 1024 * 1024);
  });

  it("PTY transcripts are complete when the terminal exits right after printing", async () => {
    const root = tempDir();
    const n = 50_000;
    const handles = await Promise.all(
      Array.from(
        { length: 3 },
        async (_, i) =>
          await startProcess({ cmd: `seq 1 ${n}`, cwd: root, dir: join(root, `t${i}`), tty: true }),
      ),
    );
    for (const h of handles) {
      expect(await waitForExit(h, { timeoutMs: 30_000 })).toMatchObject({ exit_code: 0 });
      // the terminal turns each \n into \r\n
      expect(statSync(h.output_path).size).toBe(seqBytes(n) + n);
      expect(readPreview(h.output_path, { headBytes: 0, tailBytes: 7 }).tail).toBe("50000\r\n");
    }
  });
});
