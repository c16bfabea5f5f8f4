// The episode mirror after retention trimmed episodes: the next episode is appended to the
// rewritten mirror, not the whole mirror rewritten again. (The mirror used to be checked
// against the number of episodes ever archived, so after the first trim every episode of a
// busy agent rewrote it from the database: CPU per turn rose 50% over a one-hour soak.)
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import type { EpisodeRecord } from "../src/domain/memory.ts";
import { episodesMirrorPath } from "../src/memory/continuity.ts";
import { atomicWriteFile } from "../src/store/files.ts";
import { reply } from "./fake-provider/server.ts";
import { startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** One prompt that ends in Sleep: a waiting boundary, so one more finished episode. */
async function episodeTurn(rt: TestRuntime, agent: string, n: number): Promise<void> {
  const before = await rt.host.store.memory.episodeCount(agent);
  fake.enqueue(reply.tools([{ name: "Sleep", arguments: {} }], { text: `Resting ${n}.` }));
  const r = await rt.req("POST", `/control/agents/${agent}/prompt`, { text: `task ${n}` });
  expect(r.status).toBeLessThan(300);
  await waitFor(async () => (await rt.host.store.memory.episodeCount(agent)) > before, {
    what: `episode ${n}`,
    timeoutMs: 15_000,
  });
  await waitFor(async () => !(await rt.host.store.agents.get(agent))!.current_run_id, {
    what: "run over",
  });
}

const ids = (path: string) =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((l) => (JSON.parse(l) as EpisodeRecord).id);

describe("the episode mirror after a retention trim", () => {
  it("appends the next episode instead of rewriting the mirror", async () => {
    let now = T0;
    const clock: Clock = { now: () => new Date(now), sleep: systemClock.sleep };
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const rt = await startRuntime({ home, clock });
    try {
      const agent = rt.host.defaultAgentId;
      const store = rt.host.store;
      await episodeTurn(rt, agent, 1);
      now = T0 + 5 * DAY;
      await episodeTurn(rt, agent, 2);
      await episodeTurn(rt, agent, 3);
      const mirror = episodesMirrorPath((await store.agents.get(agent))!.agent_home);
      expect(ids(mirror)).toHaveLength(3);

      // Episodes older than three days go; the host rewrites the mirror from what is kept.
      now = T0 + 6 * DAY;
      const config = JSON.parse(readFileSync(join(home, "config.json"), "utf8"));
      config.retention = { episodes: { max_age_days: 3 } };
      // Written as `holon config set` writes it, so the host sees it at once.
      atomicWriteFile(join(home, "config.json"), JSON.stringify(config), { mode: 0o600 });
      const pass = await rt.host.services.retention.runOnce();
      expect(pass.removed.episodes).toBe(1);
      const kept = (await store.memory.recentEpisodes(agent, 10)).map((e) => e.id);
      expect(ids(mirror)).toEqual(kept);
      const inode = statSync(mirror).ino;

      // The next episode is appended to that file (same inode), which matches the database.
      await episodeTurn(rt, agent, 4);
      expect(statSync(mirror).ino).toBe(inode);
      expect(ids(mirror)).toEqual((await store.memory.recentEpisodes(agent, 10)).map((e) => e.id));
      expect(ids(mirror)).toHaveLength(3);

      // A mirror someone else changed is still noticed and rewritten from the database.
      writeFileSync(mirror, "", { mode: 0o600 });
      await episodeTurn(rt, agent, 5);
      expect(ids(mirror)).toEqual((await store.memory.recentEpisodes(agent, 10)).map((e) => e.id));
      expect(ids(mirror)).toHaveLength(4);
    } finally {
      await rt.close();
    }
  });
});
