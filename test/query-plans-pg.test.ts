// The Postgres counterpart of query-plans.test.ts: nothing on a turn's path may need a scan
// of a table that grows with history. A real host on a Postgres home does the same work
// (prompts with and without a tool round, an enqueue, a command task, the inspection reads,
// an SSE replay) while every statement it sends is recorded; then each is planned as the
// prepared statement it is (a generic plan, parameters unknown) with sequential scans
// priced out, and a plan that still scans a growing table fails: no index can serve it.
// Test tables are tiny, so without that pricing Postgres would rightly scan them all.
import { turnPathWorkload } from "./helpers/workload.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime, tempHome } from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { freshDatabaseUrl, requirePostgres } from "./helpers/postgres.ts";
import { startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";
import { PgDatabase } from "../src/store/pg.ts";

/** Tables whose size does not grow with history (as in query-plans.test.ts). */
const BOUNDED = new Set([
  "agents",
  "deadlines",
  "schema_migrations",
  "store_stats",
  "retention_floors",
  "event_types",
]);

/** Statement (whitespace-collapsed, SQLite's text) → why a scan of it is bounded anyway. */
const ALLOWED: Record<string, string> = {};

const pg = requirePostgres();
const executed = new Set<string>();
const original = PgDatabase.prototype.query;

let fake: FakeProvider;
beforeAll(async () => {
  if (pg) fake = await startFakeProvider();
});
afterAll(async () => {
  PgDatabase.prototype.query = original;
  await fake?.close();
  cleanupHomes();
});

describe("query plans on a turn's path, on Postgres", () => {
  it.skipIf(!pg)("no statement a working host sends needs a scan of a growing table", async () => {
    const home = tempHome();
    const url = freshDatabaseUrl();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    PgDatabase.prototype.query = function (this: PgDatabase, name, text, values) {
      executed.add(text);
      return original.call(this, name, text, values);
    };
    const rt = await startRuntime({ home, env: { ...process.env, HOLON_DATABASE_URL: url } });
    try {
      expect(rt.host.services.store.kind).toBe("postgres");
      await turnPathWorkload(rt, fake);
    } finally {
      PgDatabase.prototype.query = original;
      await rt.close();
    }

    // Plan each statement on a connection of the test's own (the host's is closed).
    const db = new PgDatabase(url);
    const problems: string[] = [];
    try {
      db.exec("SET enable_seqscan = off");
      db.exec("SET plan_cache_mode = force_generic_plan");
      let n = 0;
      // The check can fail: a lookup no index serves is flagged.
      executed.add("SELECT agent_id FROM events WHERE id = $1");
      for (const text of executed) {
        if (
          !/^\s*(SELECT|UPDATE|DELETE|INSERT)/i.test(text) ||
          /^\s*INSERT\b(?![\s\S]*\bSELECT\b)/i.test(text)
        )
          continue;
        const params = (text.match(/\$\d+/g) ?? []).reduce(
          (m, p) => Math.max(m, Number(p.slice(1))),
          0,
        );
        const name = `plan${++n}`;
        db.exec(`PREPARE ${name} AS ${text}`);
        const args = params === 0 ? "" : `(${Array(params).fill("NULL").join(", ")})`;
        const plan = db.prepare(`EXPLAIN EXECUTE ${name}${args}`).all() as {
          "QUERY PLAN": string;
        }[];
        db.exec(`DEALLOCATE ${name}`);
        const lines = plan.map((r) => r["QUERY PLAN"]);
        for (const line of lines) {
          const scan = /Seq Scan on (\w+)/.exec(line);
          if (scan && !BOUNDED.has(scan[1]!) && !ALLOWED[text.replace(/\s+/g, " ").trim()]) {
            problems.push(`${text.replace(/\s+/g, " ").trim()}\n    ${lines.join("\n    ")}`);
            break;
          }
        }
      }
      // The workload reached the turn path's statements.
      expect(n).toBeGreaterThan(40);
    } finally {
      db.close();
    }
    const planted = problems.filter((p) =>
      p.startsWith("SELECT agent_id FROM events WHERE id = $1\n"),
    );
    expect(planted, "the planted statement is flagged").toHaveLength(1);
    problems.splice(problems.indexOf(planted[0]!), 1);
    expect(problems, problems.join("\n\n")).toEqual([]);
  });
});
