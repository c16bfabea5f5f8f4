// Deleting an agent removes its own state with it: an agent created later under the same id
// starts clean (no working memory, work state, skills, workspaces, timers or trigger of the
// old one), and those tables stay bounded by the live agents, as their retention owners say.
// The real CLI creates, arms and deletes; the audit history (events) stays.
import { describe, expect, it } from "vitest";
import { parked } from "./helpers/history.ts";
import { runCli, startRuntime } from "./helpers/home.ts";

const OWN_STATE = [
  "working_memory",
  "work_agent_state",
  "agent_skills",
  "agent_workspaces",
  "timers",
  "external_triggers",
];

describe("agent delete", () => {
  it("removes the agent's own state, so a re-created agent of that id inherits none of it", async () => {
    const rt = await startRuntime({ executor: () => parked });
    try {
      const store = rt.host.store;
      const cli = async (...args: string[]) => {
        const r = await runCli(args, { env: { HOLON_HOME: rt.home } });
        expect(r.code, r.stderr).toBe(0);
        return r;
      };
      const rows = (agentId: string) =>
        Object.fromEntries(
          OWN_STATE.map((t) => [
            t,
            (
              store.db
                .prepare(`SELECT COUNT(*) AS n FROM ${t} WHERE agent_id = ?`)
                .get(agentId) as {
                n: number;
              }
            ).n,
          ]),
        );

      await cli("agent", "create", "scout");
      for (const agentId of ["scout", "main"]) {
        await cli("timer", agentId, "--every", "1h", "look around");
        await cli("agent", "trigger", agentId);
        // State a turn boundary and the work plane write (no turn runs here).
        store.db
          .prepare("INSERT INTO working_memory (agent_id, data) VALUES (?, ?)")
          .run(agentId, "{}");
        store.db
          .prepare("INSERT INTO work_agent_state (agent_id, data) VALUES (?, ?)")
          .run(agentId, "{}");
        store.db
          .prepare(
            "INSERT INTO agent_skills (agent_id, skill_id, state, updated_at, data) VALUES (?, 'sk', 'active', '', '{}')",
          )
          .run(agentId);
      }
      const mainBefore = rows("main");
      expect(rows("scout")).toMatchObject({ working_memory: 1, timers: 1, external_triggers: 1 });

      await cli("agent", "delete", "scout", "--yes");
      expect(Object.values(rows("scout"))).toEqual(OWN_STATE.map(() => 0));
      expect(rows("main")).toEqual(mainBefore);
      // the audit stays: the deletion is an event of scout's
      expect(
        (await store.events.after("scout", 0, 10_000)).some((e) => e.type === "agent_deleted"),
      ).toBe(true);

      await cli("agent", "create", "scout");
      expect(await store.memory.workingMemory("scout")).toBeUndefined();
      const timers = await cli("timer", "list", "scout", "--json");
      expect(JSON.parse(timers.stdout)).toEqual([]);
    } finally {
      await rt.close();
    }
  }, 60_000);
});
