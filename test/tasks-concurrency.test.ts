// 20 command tasks printing continuously under a real `holon serve`: every line reaches its
// output file, and the host's memory stays bounded (output goes to files, not through the host).
import { openRecords } from "./helpers/raw-store.ts";
import { afterAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { cleanupHomes, spawnServe, tempHome, waitFor } from "./helpers/home.ts";

const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  cleanupHomes();
});

function rssKb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : 0;
}

describe("concurrent tasks", () => {
  it("20 tasks printing continuously lose no output and do not grow the host", async () => {
    const home = tempHome();
    const s = await spawnServe(home);
    procs.push(s.proc);
    const pid = s.proc.pid!;
    const post = async (body: unknown) => {
      const res = await fetch(`${s.url}/control/agents/main/tasks`, {
        method: "POST",
        headers: { "content-type": "application/json", ...s.auth },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as any).task.task_id as string;
    };
    const LINES = 40_000; // ~100 bytes a line: ~4 MB per task, ~80 MB in all
    const pad = "x".repeat(80);
    const baseline = rssKb(pid);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push(
        await post({
          cmd: `i=0; while [ $i -lt ${LINES} ]; do echo "t${i} line $i ${pad}"; i=$((i+1)); done`,
        }),
      );
    }
    let peak = baseline;
    const records = await waitFor(
      async () => {
        peak = Math.max(peak, rssKb(pid));
        const res = await fetch(`${s.url}/agents/main/tasks`, { headers: s.auth });
        const tasks = ((await res.json()) as any).tasks as any[];
        const mine = tasks.filter((t) => ids.includes(t.task_id));
        return mine.length === 20 && mine.every((t) => t.status !== "running") ? mine : null;
      },
      { what: "all 20 tasks to finish", timeoutMs: 120_000 },
    );
    // Public task views carry no process paths; the output file is read from the store.
    const db = openRecords(home);
    const outputPath = (id: string) =>
      JSON.parse(
        (db.prepare("SELECT data FROM tasks WHERE id = ?").get(id) as { data: string }).data,
      ).output_path as string;
    for (const t of records) {
      expect(t.status).toBe("completed");
      const path = outputPath(t.task_id);
      const n = Number(/^t(\d+) /.exec(readFileSync(path, "utf8"))![1]);
      const lines = readFileSync(path, "utf8").split("\n");
      expect(lines.at(-1)).toBe("");
      lines.pop();
      expect(lines.length).toBe(LINES);
      lines.forEach((l, j) => {
        if (l !== `t${n} line ${j} ${pad}`) throw new Error(`task ${n}: line ${j} is ${l}`);
      });
    }
    db.close();
    // ~80 MB went through the tasks; the host may not have held on to it
    expect(peak - baseline).toBeLessThan(60 * 1024);
  }, 150_000);
});
