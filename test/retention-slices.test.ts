// A retention pass over many finished tasks yields to the event loop by the slice of work,
// not once per file operation: on a busy host every yield waits behind the turns, so a pass
// that awaited a recursive `rm` per task output ran for ten minutes while the history
// families overshot their caps. Counted as event-loop turns, which timing does not change.
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { RetentionJob } from "../src/host/retention.ts";
import { onlyRetention, parked, putCommandTask } from "./helpers/history.ts";
import { startRuntime } from "./helpers/home.ts";

const TASKS = 200;

describe("retention pass over task output", () => {
  it("removes 200 finished tasks and their output in a few loop turns per slice of work, not per file", async () => {
    const rt = await startRuntime({ executor: () => parked });
    try {
      const store = rt.host.store;
      const dirs: string[] = [];
      await store.tx(async () => {
        for (let i = 0; i < TASKS; i++) {
          const t = await putCommandTask(rt.host, {
            id: `task_${String(i).padStart(4, "0")}`,
            status: "completed",
            at: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
            files: { "stdout.log": `output ${i}\n`, "status.json": "{}" },
            cmd: "true",
          });
          dirs.push(t.process_dir!);
        }
      });
      const job = new RetentionJob({
        store,
        policy: onlyRetention({ tasks: { max_age_ms: null, max_bytes: 1 } }),
      });
      let turns = 0;
      let passing = true;
      const count = () => {
        turns++;
        if (passing) setImmediate(count);
      };
      setImmediate(count);
      const summary = await job.runOnce();
      passing = false;
      expect(summary.removed.tasks).toBe(TASKS);
      expect(summary.removed.task_output).toBe(TASKS);
      expect(dirs.filter((d) => existsSync(d))).toEqual([]);
      // One turn per slice of work: about a hundred here under load; awaiting each file
      // operation took over 80,000.
      expect(turns, `the pass took ${turns} event-loop turns`).toBeLessThan(TASKS * 5);
    } finally {
      await rt.close();
    }
  });
});
