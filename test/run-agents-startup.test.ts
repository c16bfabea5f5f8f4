// Finished `holon run` agents pile up in a home (stopped, kept for inspection). A host start
// does no per-agent work for them (home layout, patch-journal recovery, restart recovery,
// narrowing their runtime directory's file modes) and decodes none of their records: counted
// here by what that work leaves on disk and by the records decoded, not timed. Their work
// runs when the loop starts again (`holon run --resume`).
import { chmodSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { runOnce } from "../src/host/run-once.ts";
import { patchJournalDir } from "../src/tools/workspace/apply-patch-engine.ts";
import { reply } from "./fake-provider/server.ts";
import { tempHome } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

describe("finished run agents at host start", () => {
  it("get no per-agent start-up work until they are resumed", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const RUNS = 6;
    let host = await RuntimeHost.open({ home });
    const runIds: string[] = [];
    try {
      for (let i = 0; i < RUNS; i++) {
        fake.enqueue(reply.text(`answer ${i}`));
        const r = await runOnce(host, { text: `question ${i}` });
        expect(r.final_text).toBe(`answer ${i}`);
        runIds.push(r.agent_id);
      }
      for (const id of runIds) expect((await host.store.agents.get(id))!.status).toBe("stopped");
    } finally {
      await host.shutdown();
    }
    // What a start does for an agent leaves marks: its home layout is made again, and its
    // patch journals are recovered (a journal without a record is removed). Remove every
    // home layout, and leave one run agent a journal a recovery would remove.
    const homeOf = (id: string) => join(home, "agents", id);
    for (const id of [...runIds, "main"]) {
      expect(existsSync(homeOf(id)), id).toBe(true);
    }
    const mainHome = (await host.store.agents.get("main"))?.agent_home ?? homeOf("main");
    for (const id of runIds) rmSync(homeOf(id), { recursive: true, force: true });
    rmSync(join(mainHome, "memory"), { recursive: true, force: true });
    const resumed = runIds[2]!;
    const junk = join(patchJournalDir(homeOf(resumed)), "cut-short");
    mkdirSync(junk, { recursive: true });
    writeFileSync(join(junk, "partial"), "x");
    // A file an older version left readable by others: a start does not walk a finished run
    // agent's runtime directory; its loop starting again narrows it.
    const wide = join(homeOf(resumed), ".holon", "left-wide");
    writeFileSync(wide, "x", { mode: 0o644 });
    chmodSync(wide, 0o644);

    host = await RuntimeHost.open({ home });
    try {
      const store = host.store;
      // Nor was a finished run agent's record decoded: only the default agent's was.
      expect(store.agents.decoded, "agent records decoded by the start").toBe(1);
      // The live default agent got its start-up work: its layout is back.
      expect(existsSync(join(mainHome, "memory"))).toBe(true);
      // Not one finished run agent did: no directory was created for any of them.
      const others = runIds.filter((id) => id !== resumed);
      const homes = await Promise.all(
        others.map(async (id) => (await store.agents.get(id))!.agent_home),
      );
      const touched = others.filter((_, i) => existsSync(homes[i]!));
      expect(touched, "finished run agents given start-up work").toEqual([]);
      expect(existsSync(join(homeOf(resumed), "memory"))).toBe(false);
      expect(existsSync(junk), "a finished run agent's journals were recovered").toBe(true);
      expect(statSync(wide).mode & 0o777).toBe(0o644);
      expect(host.services.deferredAgents.size).toBe(RUNS);
      // Resuming one does its work first (journals recovered, layout made), then runs.
      fake.enqueue(reply.text("resumed answer"));
      const r = await runOnce(host, { text: "again", resume: resumed });
      expect(r.final_text).toBe("resumed answer");
      expect(existsSync(junk)).toBe(false);
      expect(statSync(wide).mode & 0o777).toBe(0o600);
      expect(existsSync(join(homeOf(resumed), "memory"))).toBe(true);
      expect(host.services.deferredAgents.has(resumed)).toBe(false);
      expect(host.services.deferredAgents.size).toBe(RUNS - 1);
      const after = await Promise.all(
        others.map(async (id) => (await store.agents.get(id))!.agent_home),
      );
      expect(others.filter((_, i) => existsSync(after[i]!))).toEqual([]);
    } finally {
      await host.shutdown();
    }
  }, 60_000);
});
