// SQLite only, on both test runs: SQLite's plans (query-plans-pg.test.ts is the Postgres counterpart).
// Nothing on a turn's path may get slower as history grows. This test records every SQL
// statement a real host executes while it works (operator prompts with and without a tool
// round, a public enqueue, a command task, the inspection reads and an SSE replay), then
// asks SQLite how it would run each one (EXPLAIN QUERY PLAN) and fails on:
//   - a full scan of a table that grows with history (every table but the bounded ones);
//   - a temporary b-tree (a sort or DISTINCT over rows the index did not order);
//   - an index search that leaves some of the query's equality conditions to be checked
//     row by row, without a LIMIT to stop it (it walks every row of that index prefix).
// A statement may be excused only in ALLOWED, with the reason its input stays bounded.
import { turnPathWorkload } from "./helpers/workload.ts";
import { StatementSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime, tempHome } from "./helpers/home.ts";
import { configureFakeProvider } from "./helpers/provider.ts";
import { startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

/** Tables whose size does not grow with history (one row per agent, per pending deadline, …). */
const BOUNDED = new Set([
  "agents",
  "deadlines",
  "schema_migrations",
  "store_stats",
  "retention_floors",
  "event_types",
  "sqlite_schema",
  "sqlite_master",
]);

/** Statement (whitespace-collapsed) → why its plan is acceptable anyway. */
const ALLOWED: Record<string, string> = {
  "SELECT data FROM tasks WHERE status IN ('queued', 'running') ORDER BY rowid":
    "restart recovery: the partial index holds only unfinished tasks; sorting those is bounded",
  "SELECT agent_id, seq, id, created_at, run_id, body FROM transcript WHERE run_id = ? AND agent_id = ? ORDER BY seq":
    "run ids are unique: the index finds one run's entries, and agent_id only confirms them",
  "SELECT agent_id, data FROM agents WHERE group_id IN (SELECT value FROM json_each(?))":
    "a host's acquire: json_each walks its parameter (the groups being acquired), and each group's agents come from the agents_group index",
};

const executed = new Set<string>();
const originals = new Map<string, (...args: unknown[]) => unknown>();

function record(): void {
  for (const name of ["run", "get", "all", "iterate"] as const) {
    const proto = StatementSync.prototype as unknown as Record<
      string,
      (...a: unknown[]) => unknown
    >;
    const original = proto[name]!;
    originals.set(name, original);
    proto[name] = function (this: StatementSync, ...args: unknown[]) {
      executed.add(this.sourceSQL);
      return original.apply(this, args);
    };
  }
}

function restore(): void {
  const proto = StatementSync.prototype as unknown as Record<string, unknown>;
  for (const [name, fn] of originals) proto[name] = fn;
}

const squash = (sql: string) => sql.replace(/\s+/g, " ").trim();

/** Bindings for every parameter of `sql`: nulls (the plan does not depend on values). */
function nullBindings(sql: string): { positional: null[]; named: Record<string, null> } {
  const positional: null[] = [];
  const named: Record<string, null> = {};
  const stripped = sql.replace(/'(?:[^']|'')*'/g, "''");
  for (const m of stripped.matchAll(/\?(\d*)|[:@$]([A-Za-z_][A-Za-z0-9_]*)/g)) {
    if (m[2]) named[m[2]] = null;
    else positional.push(null);
  }
  return { positional, named };
}

/** The table's partial-index condition columns, e.g. `status` for tasks_active. */
function partialIndexColumns(db: any, index: string): string[] {
  const row = db
    .prepare("SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = ?")
    .get(index);
  const where = /\bWHERE\b(.*)$/is.exec(row?.sql ?? "")?.[1] ?? "";
  return [...where.matchAll(/\b([a-z_]+)\s*(?:=|IN\b|IS\b)/gi)].map((m) => m[1]!.toLowerCase());
}

/** Columns the statement constrains by equality or IN in its WHERE clause. */
function equalityColumns(sql: string): string[] {
  const where = /\bWHERE\b(.*?)(?:\bORDER BY\b|\bLIMIT\b|\bGROUP BY\b|\bON CONFLICT\b|$)/is.exec(
    sql,
  )?.[1];
  if (!where) return [];
  return [...where.matchAll(/\b([a-z_]+)\s*(?:=(?!=)|\bIN\s*\()/gi)].map((m) =>
    m[1]!.toLowerCase(),
  );
}

export function planProblems(db: any, sql: string): string[] {
  const { positional, named } = nullBindings(sql);
  const stmt = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = (
    Object.keys(named).length > 0 ? stmt.all(named, ...positional) : stmt.all(...positional)
  ) as { detail: string }[];
  const problems: string[] = [];
  const hasLimit = /\bLIMIT\b/i.test(sql);
  const tables = rows
    .map((r) => /^(?:SCAN|SEARCH) (\w+)/.exec(r.detail)?.[1])
    .filter((t): t is string => t !== undefined);
  const onlyBounded = tables.length > 0 && tables.every((t) => BOUNDED.has(t));
  if (process.env.QUERY_PLANS_VERBOSE)
    console.log(
      sql,
      rows.map((r) => r.detail),
    );
  for (const { detail } of rows) {
    const scan = /^SCAN (\w+)/.exec(detail);
    if (scan && !BOUNDED.has(scan[1]!)) problems.push(`full scan: ${detail}`);
    if (/TEMP B-TREE/.test(detail) && !onlyBounded) problems.push(`temporary b-tree: ${detail}`);
    const search = /^SEARCH (\w+) USING (?:COVERING )?INDEX (\w+) \((.*)\)/.exec(detail);
    if (search && !BOUNDED.has(search[1]!) && !hasLimit) {
      const covered = new Set([
        ...[...search[3]!.matchAll(/([a-z_]+)[=<>]/gi)].map((m) => m[1]!.toLowerCase()),
        ...partialIndexColumns(db, search[2]!),
      ]);
      const loose = equalityColumns(sql).filter((c) => !covered.has(c));
      if (loose.length > 0) {
        problems.push(`index search leaves ${loose.join(", ")} to a row-by-row check: ${detail}`);
      }
    }
  }
  return problems;
}

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  restore();
  await fake.close();
  cleanupHomes();
});

describe("query plans on a turn's path", () => {
  it("no statement a working host executes scans or sorts a growing table", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    record();
    const rt = await startRuntime({ home });
    try {
      await turnPathWorkload(rt, fake);
    } finally {
      await rt.close();
      restore();
    }

    const checked = [...executed]
      .map(squash)
      .filter((sql) => /^(SELECT|INSERT|UPDATE|DELETE|WITH)\b/i.test(sql));
    // The reads this test exists for must be among them.
    expect(checked.some((s) => /FROM messages WHERE agent_id = \? ORDER BY seq DESC/.test(s))).toBe(
      true,
    );
    expect(checked.some((s) => /FROM transcript WHERE run_id = \?/.test(s))).toBe(true);

    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(`${home}/holon.db`, { readOnly: true });
    const failures: string[] = [];
    try {
      for (const sql of checked) {
        if (ALLOWED[sql]) continue;
        for (const p of planProblems(db, sql)) failures.push(`${sql}\n    ${p}`);
      }
    } finally {
      db.close();
    }
    expect(failures, failures.join("\n")).toEqual([]);
  });

  it("the checker itself catches a sort over history and a scan", async () => {
    const { DatabaseSync } = await import("node:sqlite");
    const db = new DatabaseSync(":memory:");
    db.exec(
      "CREATE TABLE messages (seq INTEGER PRIMARY KEY, agent_id TEXT, status TEXT, priority_rank INT); CREATE INDEX messages_queue ON messages (agent_id, status, priority_rank, seq);",
    );
    expect(
      planProblems(db, "SELECT seq FROM messages WHERE agent_id = ? ORDER BY seq DESC LIMIT ?"),
    ).toEqual([expect.stringMatching(/temporary b-tree/)]);
    expect(planProblems(db, "SELECT seq FROM messages WHERE status = ?")).toEqual([
      expect.stringMatching(/full scan/),
    ]);
    db.exec("CREATE INDEX messages_agent ON messages (agent_id)");
    expect(
      planProblems(db, "SELECT seq FROM messages WHERE agent_id = ? ORDER BY seq DESC LIMIT ?"),
    ).toEqual([]);
    db.exec("CREATE TABLE tasks (id TEXT PRIMARY KEY, agent_id TEXT, status TEXT)");
    db.exec("CREATE INDEX tasks_agent ON tasks (agent_id)");
    expect(
      planProblems(
        db,
        "SELECT id FROM tasks WHERE agent_id = ? AND status IN ('queued') ORDER BY rowid",
      ),
    ).toEqual([expect.stringMatching(/leaves status/)]);
    db.close();
  });
});
