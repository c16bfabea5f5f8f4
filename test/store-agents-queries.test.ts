// The questions a host start asks of every agent are answered in SQL from the stored JSON
// (store/agents.ts), so a start does not decode every agent a past `holon run` left behind.
// Each answer must be the one the record's own predicate gives: checked here on a table of
// records that differ in exactly the fields each predicate reads.
import { afterAll, describe, expect, it } from "vitest";
import { isDormantRunAgent, type AgentRecord } from "../src/domain/agent.ts";
import { RuntimeHost } from "../src/host/host.ts";
import { cleanupHomes, tempHome } from "./helpers/home.ts";

afterAll(() => cleanupHomes());

describe("agent queries at start", () => {
  it("give the same answers as the record predicates", async () => {
    const host = await RuntimeHost.open({ home: tempHome(), autostartAgents: false });
    try {
      const store = host.store;
      const base = (await store.agents.get("main"))!;
      const reservation = (from: string, returned?: string) => ({
        from_agent_id: from,
        limits: { tokens: 1000 },
        reserved_at: base.created_at,
        ...(returned ? { returned_at: returned } : {}),
      });
      const variants: AgentRecord[] = [
        { ...base, agent_id: "run-done", visibility: "private", status: "stopped" },
        {
          ...base,
          agent_id: "run-busy",
          visibility: "private",
          status: "stopped",
          current_run_id: "run_1",
        },
        { ...base, agent_id: "run-idle", visibility: "private", status: "awake_idle" },
        { ...base, agent_id: "run-public", visibility: "public", status: "stopped" },
        { ...base, agent_id: "RUN-upper", visibility: "private", status: "stopped" },
        { ...base, agent_id: "legacy", workspace_root: "/tmp", active_workspace: undefined },
        { ...base, agent_id: "legacy-empty", workspace_root: "", active_workspace: undefined },
        { ...base, agent_id: "child-a", budget_reservation: reservation("parent") },
        {
          ...base,
          agent_id: "child-b",
          budget_reservation: reservation("parent", base.created_at),
        },
        { ...base, agent_id: "child-c", budget_reservation: reservation("other") },
        { ...base, agent_id: "no-mcp", mcp: { servers: {} } },
      ];
      await store.tx(async () => {
        for (const v of variants) {
          const { active_workspace, ...rest } = v;
          await store.agents.put(active_workspace === undefined ? rest : v);
        }
      });
      const all = await store.agents.list();
      expect(await store.agents.dormantRunIds()).toEqual(
        all.filter(isDormantRunAgent).map((a) => a.agent_id),
      );
      expect(await store.agents.dormantRunIds()).toEqual(["run-done"]);
      expect((await store.agents.withLegacyWorkspace()).map((a) => a.agent_id)).toEqual(
        all.filter((a) => !a.active_workspace && a.workspace_root).map((a) => a.agent_id),
      );
      for (const parent of ["parent", "other", "main"]) {
        expect(await store.agents.reservedFrom(parent)).toEqual(
          all
            .filter(
              (a) =>
                a.budget_reservation?.from_agent_id === parent && !a.budget_reservation.returned_at,
            )
            .map((a) => a.agent_id),
        );
      }
      expect(await store.agents.anyOwnMcpServers()).toBe(false);
      await store.tx(
        async () =>
          await store.agents.put({
            ...base,
            agent_id: "with-mcp",
            mcp: { servers: { fs: { x: 1 } } },
          }),
      );
      expect(await store.agents.anyOwnMcpServers()).toBe(true);
      // A list that skips agents leaves their rows undecoded.
      const before = store.agents.decoded;
      await store.agents.invalidate();
      const skip = new Set(await store.agents.dormantRunIds());
      const listed = await store.agents.list(skip);
      expect(listed.map((a) => a.agent_id)).not.toContain("run-done");
      expect(store.agents.decoded - before).toBe(listed.length);
    } finally {
      await host.shutdown();
    }
  });
});
