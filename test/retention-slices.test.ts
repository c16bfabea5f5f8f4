// A retention pass over many finished tasks yields to the event loop by the slice of work,
// not once per file operation: on a busy host every yield waits behind the turns, so a pass
// that awaited a recursive `rm` per task output ran for ten minutes while the history
// families overshot their caps. Counted as event-loop turns, which timing does not change.
import { mkdirSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnExecutor } from "../src/agent/runtime.ts";
import type { TaskRecord } from "../src/domain/task.ts";
import { effectiveRetention } from "../src/host/retention-config.ts";
import { RetentionJob } from "../src/host/retention.ts";
import { startRuntime } from "./helpers/home.ts";

const parked: TurnExecutor = { run: () => new Promise(() => {}) };
const TASKS = 200;

describe("retention pass over task output", () => {
  it("removes 200 finished tasks and their output in a few loop turns per slice of work, not per file", async () => {
    const rt = await startRuntime({ executor: () => parked });
    try {
      const store = rt.host.store;
      const agentHome = store.agents.get("main")!.agent_home;
      const dirs: string[] = [];
      store.tx(() => {
        for (let i = 0; i < TASKS; i++) {
          const id = `task_${String(i).padStart(4, "0")}`;
          const dir = join(agentHome, ".holon", "processes", id);
          mkdirSync(join(dir, "logs"), { recursive: true });
          writeFileSync(join(dir, "stdout.log"), `output of ${id}\n`);
          writeFileSync(join(dir, "logs", "status.json"), "{}");
          dirs.push(dir);
          const at = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
          const t: TaskRecord = {
            id,
            agent_id: "main",
            kind: "command_task",
            status: "completed",
            created_at: at,
            updated_at: at,
            finished_at: at,
            cmd: "true",
            cmd_digest: "d",
            workdir: agentHome,
            shell: "/bin/sh",
            login: false,
            tty: false,
            accepts_input: false,
            output_path: join(dir, "stdout.log"),
            process_dir: dir,
            terminal_reentry: false,
          };
          store.tasks.put(t);
        }
      });
      const none = { max_age_days: 0, max_mb: 0 };
      const base = effectiveRetention({
        events: none,
        transcript: none,
        messages: none,
        briefs: none,
        episodes: none,
        tasks: none,
        task_output: none,
        ledger: none,
      });
      const job = new RetentionJob({
        store,
        policy: () => ({ ...base, tasks: { max_age_ms: null, max_bytes: 1 } }),
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
