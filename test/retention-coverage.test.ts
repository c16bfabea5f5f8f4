// Everything under HOLON_HOME is bounded: every table of the database and every kind of file
// a working home holds has an owner in retention (host/retention-owners.ts), every retention
// owner is bounded by age and by size both, and context episodes (the table and each agent's
// JSONL mirror) and the memory index follow the policy.
import { tableNames } from "./helpers/raw-store.ts";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { EpisodeRecord } from "../src/domain/memory.ts";
import { openLog } from "../src/host/log.ts";
import { RETENTION_KEY_DEFS, effectiveRetention } from "../src/host/retention-config.ts";
import { RetentionJob } from "../src/host/retention.ts";
import { FILE_KINDS, TABLE_OWNERS, fileKindOf, type Owner } from "../src/host/retention-owners.ts";
import { episodesMirrorPath } from "../src/memory/continuity.ts";
import { indexPaths } from "../src/memory/search.ts";
import { reply } from "./fake-provider/server.ts";
import { startRuntime, waitFor, writeHomeConfig } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { episodeRecord, fakeClock, parked } from "./helpers/history.ts";

const fake = useFakeProvider();
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of closers.splice(0)) await c();
});

const DAY = 86_400_000;
const T0 = Date.parse("2026-01-01T00:00:00.000Z");

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const s = statSync(path, { throwIfNoEntry: false });
    if (!s) continue;
    if (s.isDirectory()) out.push(...walk(path));
    else out.push(path);
  }
  return out;
}

/** The retention families the owners name (tables and file kinds). */
function retentionFamilies(): string[] {
  const owners: Owner[] = [...Object.values(TABLE_OWNERS), ...FILE_KINDS.map((k) => k.owner)];
  const families = owners.flatMap((o) => (o.rule === "retention" ? [o.family] : []));
  return [...new Set(families)].sort();
}

/** What a family lacks of the two limits, judged from the config keys a user can set. */
function missingLimits(family: string, keys: ReadonlySet<string>): string[] {
  const missing: string[] = [];
  if (!keys.has(`retention.${family}.max_age_days`)) missing.push("age");
  if (!keys.has(`retention.${family}.max_mb`) && !keys.has(`retention.${family}.max_file_mb`)) {
    missing.push("size");
  }
  return missing;
}

describe("everything under HOLON_HOME has a retention owner", () => {
  it("every retention owner is bounded by age and by size, and both are on by default", () => {
    const keys = new Set(RETENTION_KEY_DEFS.map((k) => k.key));
    const policy = effectiveRetention(undefined) as unknown as Record<
      string,
      Record<string, number | null>
    >;
    const families = retentionFamilies();
    expect(families).toEqual(
      expect.arrayContaining([
        "events",
        "tasks",
        "ledger",
        "task_output",
        "episodes",
        "trace_links",
        "logs",
      ]),
    );
    for (const family of families) {
      expect(missingLimits(family, keys), `retention.${family}`).toEqual([]);
      const limit = policy[family]!;
      expect(limit.max_age_ms, `${family} age default`).toBeGreaterThan(0);
      expect(limit.max_bytes ?? limit.max_file_bytes, `${family} size default`).toBeGreaterThan(0);
    }
    // The check fails on an owner with one limit only (the ledger and tasks had only an age).
    const ageOnly = new Set([...keys].filter((k) => k !== "retention.tasks.max_mb"));
    expect(missingLimits("tasks", ageOnly)).toEqual(["size"]);
    const sizeOnly = new Set([...keys].filter((k) => k !== "retention.ledger.max_age_days"));
    expect(missingLimits("ledger", sizeOnly)).toEqual(["age"]);
  });

  it("every table in the database has an owner, and no owner names a table that is gone", async () => {
    const rt = await startRuntime({ executor: () => parked });
    closers.push(() => rt.close());
    const tables = tableNames(rt.host.store.db);
    const policy = effectiveRetention(undefined) as Record<string, unknown>;
    for (const table of tables) {
      const owner = TABLE_OWNERS[table];
      expect(
        owner,
        `table ${table} has no retention owner in host/retention-owners.ts`,
      ).toBeDefined();
      if (owner!.rule === "retention") expect(policy[owner!.family], table).toBeDefined();
    }
    // SQLite's own AUTOINCREMENT table exists only there (Postgres keeps sequences).
    for (const table of Object.keys(TABLE_OWNERS)) {
      if (table.startsWith("sqlite_")) {
        if (rt.host.store.kind === "sqlite") {
          const row = rt.host.store.db
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?")
            .get(table);
          expect(row, table).toBeDefined();
        }
        continue;
      }
      expect(tables, table).toContain(table);
    }
  });

  it("every file a working home holds is of a kind with an owner", async () => {
    const rt = await startRuntime();
    closers.push(() => rt.close());
    await configureFakeProvider(rt.home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "echo hi" }, call_id: "c1" }]),
      reply.text("done"),
    );
    const sent = await rt.req("POST", "/agents/main/enqueue", { text: "say hi" });
    expect(sent.status).toBe(202);
    await waitFor(
      async () => (await rt.host.store.messages.get(sent.json.message_id))?.status === "processed",
      {
        what: "the turn",
      },
    );
    const agent = (await rt.host.store.agents.get("main"))!;
    // The other writers: the log, the episode mirror, the memory index.
    const log = openLog(rt.home);
    log.info("hello");
    await new Promise<void>((r) => log.flush(() => r()));
    await rt.host.store.tx(
      async () => await rt.host.store.memory.addEpisode(episodeRecord("main", 1, new Date())),
    );
    await rt.host.services.continuity.rebuildMirror(agent.agent_home, "main");
    await rt.host.services.memoryIndex.search(agent, "hi");

    const holonOwned = (rel: string) =>
      !rel.startsWith("agents/") || /^agents\/[^/]+\/(AGENTS\.md|memory\/|\.holon\/)/.test(rel);
    const files = walk(rt.home)
      .map((f) => relative(rt.home, f).split(sep).join("/"))
      .filter(holonOwned);
    // The database file, unless the records are in Postgres.
    if (rt.host.store.kind === "sqlite") expect(files).toContain("holon.db");
    expect(files).toContain("logs/holon.log");
    expect(files.some((f) => f.endsWith("context_episodes.jsonl"))).toBe(true);
    expect(files.some((f) => f.endsWith("memory.sqlite3"))).toBe(true);
    for (const f of files) expect(fileKindOf(f), `${f} has no retention owner`).toBeDefined();
    // Every retention family a file kind names exists in the policy.
    const policy = effectiveRetention(undefined) as Record<string, unknown>;
    for (const k of FILE_KINDS) {
      if (k.owner.rule === "retention") expect(policy[k.owner.family]).toBeDefined();
    }
  }, 60_000);

  it("episodes past their age or over their cap go; the mirror is rewritten from what is kept and the memory index rebuilt", async () => {
    const clock = fakeClock(T0);
    const rt = await startRuntime({ executor: () => parked, clock });
    closers.push(() => rt.close());
    const store = rt.host.store;
    const agent = (await store.agents.get("main"))!;
    const continuity = rt.host.services.continuity;
    await store.tx(async () => {
      for (let n = 1; n <= 10; n++)
        await store.memory.addEpisode(episodeRecord("main", n, new Date(T0)));
    });
    clock.set(T0 + 5 * DAY);
    await store.tx(async () => {
      for (let n = 11; n <= 20; n++)
        await store.memory.addEpisode(episodeRecord("main", n, new Date(T0 + 5 * DAY)));
    });
    await continuity.rebuildMirror(agent.agent_home, "main");
    await rt.host.services.memoryIndex.search(agent, "episode");
    const mirror = episodesMirrorPath(agent.agent_home);
    expect(readFileSync(mirror, "utf8").trim().split("\n")).toHaveLength(20);

    // Past the age (3 days): the day-0 ten go, and what is derived from them follows.
    clock.set(T0 + 6 * DAY);
    writeHomeConfig(rt.home, { retention: { episodes: { max_age_days: 3 } } }, { mode: 0o600 });
    const job = rt.host.services.retention;
    const byAge = await job.runOnce();
    expect(byAge.removed.episodes).toBe(10);
    expect(await store.memory.episodeCount("main")).toBe(10);
    const kept = readFileSync(mirror, "utf8").trim().split("\n");
    expect(kept.map((l) => (JSON.parse(l) as EpisodeRecord).id)).toEqual(
      Array.from({ length: 10 }, (_, i) => `ep_main_${i + 11}`),
    );
    expect(existsSync(indexPaths(agent.agent_home).dirty)).toBe(true);
    const hits = await rt.host.services.memoryIndex.search(agent, "episode", { limit: 50 });
    expect(hits.results.every((h) => Number(h.source_ref.split("_").at(-1)) > 10)).toBe(true);

    // The size cap: oldest first until the rest fits.
    const one = (await store.memory.episodesAfter("main", 0, 1))[0]!;
    const rowBytes =
      Buffer.byteLength(JSON.stringify(one.episode)) + one.episode.id.length + 4 + 24;
    const capped = await new RetentionJob({
      store,
      policy: () => {
        const p = effectiveRetention({ episodes: { max_age_days: 0, max_mb: 0 } });
        p.episodes.max_bytes = rowBytes * 4;
        return p;
      },
    }).runOnce();
    expect(capped.removed.episodes).toBeGreaterThanOrEqual(6);
    expect(await store.memory.episodeCount("main")).toBeLessThanOrEqual(4);
    expect((await store.memory.recentEpisodes("main", 1))[0]!.id).toBe("ep_main_20");
  });
});
