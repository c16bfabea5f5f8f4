// A client that only looks changes nothing: every GET route the host documents leaves every
// table's row count and every agent's event_seq as they were. The default external trigger
// is minted when a public agent is created (once at start for an agent that never had one),
// not by the first surface that shows it.
import { tableNames } from "./helpers/raw-store.ts";
import { afterAll, describe, expect, it } from "vitest";
import {
  cleanupHomes,
  startRuntime,
  tempHome,
  waitFor,
  writeHomeConfig,
  type TestRuntime,
} from "./helpers/home.ts";
import { openSse } from "./helpers/sse.ts";
import type { TurnExecutor } from "../src/agent/runtime.ts";

afterAll(cleanupHomes);
const parked: TurnExecutor = { run: () => new Promise(() => {}) };

async function snapshot(rt: TestRuntime): Promise<Record<string, number>> {
  const db = rt.host.store.db;
  const out: Record<string, number> = {};
  for (const name of tableNames(db)) {
    out[`rows:${name}`] = (
      db.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).get() as { n: number }
    ).n;
  }
  for (const a of await rt.host.store.agents.list()) {
    out[`event_seq:${a.agent_id}`] = (
      await rt.host.store.events.query(a.agent_id, {
        limit: 1,
        order: "desc",
      })
    )[0]!.event_seq;
  }
  return out;
}

describe("reads change nothing", () => {
  it("every GET route in /openapi.json leaves row counts and event_seq unchanged", async () => {
    // With metrics on, so /metrics answers too.
    const home = tempHome();
    writeHomeConfig(home, { telemetry: { metrics: { enabled: true } } }, { mode: 0o600 });
    const rt = await startRuntime({ home, executor: () => parked });
    try {
      await rt.host.lifecycle.control("main", "pause");
      expect((await rt.req("POST", "/control/agents/helper/create", {})).status).toBe(201);
      const work = await rt.req("POST", "/control/agents/main/work-items", { objective: "look" });
      expect(work.status).toBe(201);
      const task = await rt.req("POST", "/control/agents/main/tasks", { cmd: "echo hi" });
      expect(task.status).toBeLessThan(300);
      const taskId: string = task.json.task.task_id;
      await waitFor(async () => (await rt.host.store.tasks.get(taskId))?.status === "completed", {
        what: "the task to finish",
      });
      await rt.req(
        "POST",
        "/agents/main/enqueue",
        { text: "queued, not run" },
        { authorization: "" },
      );

      // An ask waiting on the operator (as a work item's question opens one).
      const ask = await rt.host.services.asks.open({
        agent_id: "main",
        kind: "input",
        source: "needs_input",
        scope: "work_item",
        work_item_id: work.json.work_item.id,
        about: "which database?",
        detail: "staging or production",
      });

      const doc = (await rt.req("GET", "/openapi.json")).json;
      const params: Record<string, string> = {
        id: "main",
        task_id: taskId,
        work_item_id: work.json.work_item.id,
        ask_id: ask.id,
        name: "app.js", // a console asset
      };
      type GetOp = { responses: Record<string, unknown> };
      const gets = Object.entries(doc.paths as Record<string, { get?: GetOp }>)
        .filter(([, ops]) => ops.get)
        .map(([path, ops]) => ({
          path: path.replace(/\{(\w+)\}/g, (_, name: string) => params[name]!),
          // The answer the document promises (GET /mcp promises 405: it opens no stream).
          status: Number(Object.keys(ops.get!.responses).find((k) => k !== "default")),
        }));
      expect(gets.length).toBeGreaterThan(25);

      const before = await snapshot(rt);
      for (const { path, status } of gets) {
        if (path.endsWith("/events/stream")) {
          const s = await openSse(`${rt.url}${path}?after_seq=0`, {
            authorization: `Bearer ${rt.token}`,
          });
          expect(s.status, path).toBe(200);
          for await (const _ of s.frames) break;
          s.close();
          continue;
        }
        const res = await rt.req("GET", path);
        // A documented redirect (GET /ui → /ui/) is followed to the page it names.
        const expected = status >= 300 && status < 400 ? 200 : status;
        expect(res.status, `${path}: ${JSON.stringify(res.json)}`).toBe(expected);
        expect(await snapshot(rt), path).toEqual(before);
      }
      expect(await snapshot(rt)).toEqual(before);
    } finally {
      await rt.close();
    }
  });

  it("the default trigger is minted at creation; a revoked one is not brought back by reads or restarts", async () => {
    let rt = await startRuntime({ executor: () => parked });
    const home = rt.home;
    try {
      const created = await rt.req("POST", "/control/agents/helper/create", {});
      expect(created.status).toBe(201);
      const types = (await rt.host.store.events.query("helper", { limit: 50, order: "asc" })).map(
        (e) => e.type,
      );
      expect(types).toContain("external_trigger_provisioned");
      const shown = await rt.req("GET", "/control/agents/helper/external-trigger");
      expect(shown.json.external_trigger.trigger_url).toMatch(/\/callbacks\/wake\//);

      expect(
        (await rt.req("POST", "/control/agents/helper/external-trigger/revoke", {})).status,
      ).toBe(200);
      const gone = await rt.req("GET", "/control/agents/helper/external-trigger");
      expect(gone.status).toBe(404);
      expect(gone.json.error.kind).toBe("no_external_trigger");
      expect(gone.json.error.hint).toContain("holon agent trigger helper --rotate");

      // An agent from before creation-time minting (no trigger row at all) gets one at start.
      rt.host.store.db.prepare("DELETE FROM external_triggers WHERE agent_id = 'main'").run();
      await rt.close();
      rt = await startRuntime({ home, executor: () => parked });
      expect((await rt.req("GET", "/control/agents/main/external-trigger")).status).toBe(200);
      expect((await rt.req("GET", "/control/agents/helper/external-trigger")).status).toBe(404);
      const state = await rt.req("GET", "/agents/helper/state");
      expect(state.json.external_triggers).toEqual([]);
      const rotated = await rt.req("POST", "/control/agents/helper/external-trigger/rotate", {});
      expect(rotated.status).toBe(200);
      expect((await rt.req("GET", "/control/agents/helper/external-trigger")).status).toBe(200);
    } finally {
      await rt.close();
    }
  });
});
