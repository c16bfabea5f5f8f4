// Restart-proof tasks through the real product: `holon serve` child processes SIGKILLed while a
// command task runs, then started again on the same home.
import { openRecords } from "./helpers/raw-store.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { readProcessRecord } from "../src/tasks/process.ts";
import { scanMembers } from "../src/tasks/process-proc.ts";
import { cleanupHomes, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { decodeBody } from "../src/store/codec.ts";

const procs: ChildProcess[] = [];
const groups: number[] = [];

afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  for (const g of groups) {
    try {
      process.kill(-g, "SIGKILL");
    } catch {
      // already gone
    }
  }
  cleanupHomes();
});

async function serve(home: string) {
  const s = await spawnServe(home);
  procs.push(s.proc);
  const req = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(s.url + path, {
      method,
      ...(body === undefined
        ? { headers: s.auth }
        : {
            body: JSON.stringify(body),
            headers: { "content-type": "application/json", ...s.auth },
          }),
    });
    return { status: res.status, json: (await res.json()) as any };
  };
  const kill = async (signal: NodeJS.Signals) => {
    const exited = new Promise((r) => s.proc.once("exit", r));
    s.proc.kill(signal);
    await exited;
  };
  return { ...s, req, kill };
}

/** task_result messages for a task, read from the store once no host is running. */
function taskResultCount(home: string, taskId: string): number {
  const db = openRecords(home);
  try {
    return (db.prepare("SELECT envelope FROM messages").all() as { envelope: unknown }[])
      .map((r) => decodeBody(r.envelope) as { kind: string; task_id?: string })
      .filter((m) => m.kind === "task_result" && m.task_id === taskId).length;
  } finally {
    db.close();
  }
}

describe("command tasks across host restarts", () => {
  it("a task outlives a SIGKILLed host and completes under the next one, with one task_result", async () => {
    const home = tempHome();
    const first = await serve(home);
    // The task waits for a gate, so it is still running whatever the second host's start-up takes.
    // The gate is in the agent's home: a sandboxed command cannot see the rest of HOLON_HOME.
    const gate = join(home, "agents", "main", "gate");
    const created = await first.req("POST", "/control/agents/main/tasks", {
      cmd: `while [ ! -e ${gate} ]; do sleep 0.05; done; echo done`,
    });
    expect(created.status).toBe(201);
    const taskId = created.json.task.task_id as string;
    expect(created.json.task.status).toBe("running");
    await first.kill("SIGKILL");

    const second = await serve(home);
    await waitFor(
      async () => {
        const events = await second.req("GET", "/agents/main/events?limit=200");
        return events.json.events.some((e: any) => e.type === "task_reattached_after_restart");
      },
      { what: "the task to be reattached", timeoutMs: 20_000 },
    );
    writeFileSync(gate, "");
    const finished = await waitFor(
      async () => {
        const r = await second.req("GET", `/agents/main/tasks/${taskId}`);
        return r.json.task.status !== "running" ? r.json.task : null;
      },
      { what: "the task to settle after the restart", timeoutMs: 20_000 },
    );
    expect(finished).toMatchObject({ status: "completed", exit_status: { exit_code: 0 } });
    const out = await second.req("GET", `/agents/main/tasks/${taskId}/output`);
    expect(out.json).toMatchObject({
      retrieval_status: "success",
      task: { output_preview: "done\n", exit_status: { exit_code: 0, signal: null } },
    });
    await second.kill("SIGTERM");
    expect(taskResultCount(home, taskId)).toBe(1);
  }, 40_000);

  it("a task killed together with its host is failed with a failure artifact, never left running", async () => {
    const home = tempHome();
    const first = await serve(home);
    const created = await first.req("POST", "/control/agents/main/tasks", { cmd: "sleep 60" });
    const taskId = created.json.task.task_id as string;
    // The process directory is not in any public view; read it from the store itself.
    const db = openRecords(home);
    const row = db.prepare("SELECT data FROM tasks WHERE id = ?").get(taskId) as { data: string };
    db.close();
    const proc = readProcessRecord(JSON.parse(row.data).process_dir)!;
    groups.push(proc.pgid);
    await first.kill("SIGKILL");
    process.kill(-proc.pgid, "SIGKILL");
    await waitFor(() => scanMembers([proc.sid], [proc.pgid]).length === 0, {
      what: "the task's group to die",
    });

    const second = await serve(home);
    const task = (await second.req("GET", `/agents/main/tasks/${taskId}`)).json.task;
    expect(task.status).toBe("failed");
    expect(task.failure.summary).toMatch(/could not be recovered/);
    const out = await second.req("GET", `/agents/main/tasks/${taskId}/output`);
    expect(out.json.retrieval_status).toBe("success");
    expect(out.json.task.failure_artifact).toMatchObject({
      category: "task",
      kind: "task_process_lost",
      task_id: taskId,
    });
    const status = await second.req("GET", "/agents/main/status");
    expect(status.json.active_task_ids).toEqual([]);
    await second.kill("SIGTERM");
    expect(taskResultCount(home, taskId)).toBe(1);
  }, 40_000);
});
