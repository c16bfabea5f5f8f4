// Moving a home to Postgres as a user does it: a `holon serve` on the SQLite file works a
// while and stops; `holon store export`, then `holon store import --database-url` into an
// empty Postgres database; `HOLON_DATABASE_URL=… holon serve` starts on it, and the same
// agent answers the next prompt with its history, its event numbers continuing without a gap.
// A second host on that database is refused while the first runs.
import type { ChildProcess } from "node:child_process";
import { existsSync, renameSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, spawnServe, tempHome } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { cliTurns } from "./helpers/turns.ts";
import { emptyDatabaseUrl, psqlQuery, requirePostgres } from "./helpers/postgres.ts";
import { reply } from "./fake-provider/server.ts";

const pg = requirePostgres();
const fake = useFakeProvider();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

describe.skipIf(!pg)("a home moved from SQLite to Postgres", () => {
  it("continues the same agent on Postgres, and a second host on the database is refused", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    const dumps = tempHome("holon-dumps-", { sqlite: true });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let env: Record<string, string> = { HOLON_HOME: home };
    const cli = (...args: string[]) => runCli(args, { env });
    const { events, turn } = cliTurns(cli);

    const first = await spawnServe(home);
    procs.push(first.proc);
    fake.enqueue(reply.text("Hello, I am main."), reply.text("The capital is Paris."));
    await turn("hello");
    await turn("what is the capital of France?");
    const before = await events();
    const exited = new Promise((r) => first.proc.once("exit", r));
    first.proc.kill("SIGTERM");
    await exited;

    const dir = join(dumps, "dump");
    const exp = await cli("store", "export", dir);
    expect(exp.code, exp.stderr).toBe(0);
    const url = emptyDatabaseUrl();
    const imp = await cli("store", "import", "--database-url", url, dir);
    expect(imp.code, imp.stderr).toBe(0);
    // The SQLite file is set aside: from now on the records are in Postgres only.
    renameSync(join(home, "holon.db"), join(dumps, "old.db"));

    env = { HOLON_HOME: home, HOLON_DATABASE_URL: url };
    const second = await spawnServe(home, [], { HOLON_DATABASE_URL: url });
    procs.push(second.proc);
    try {
      fake.enqueue(reply.text("Yes, still here."));
      await turn("are you still there?");
      // The conversation before the move is in the prompt of the turn after it.
      expect(JSON.stringify(fake.requests.at(-1)!.body)).toContain("The capital is Paris.");
      const after = await events();
      const seqs = after.map((e) => e.event_seq).sort((a, b) => a - b);
      seqs.forEach((s, i) => expect(s).toBe(i + 1)); // no gap, no repeat
      expect(seqs.length).toBeGreaterThan(before.length);
      for (const e of before) {
        expect(after.find((a) => a.event_seq === e.event_seq)?.id).toBe(e.id);
      }
      // The new turn's rows are in Postgres, and no SQLite file came back.
      expect(Number(psqlQuery(url, "SELECT count(*) FROM events WHERE agent_id = 'main'"))).toBe(
        seqs.length,
      );
      expect(existsSync(join(home, "holon.db"))).toBe(false);

      // A second host on the same database (another home, same URL) is refused.
      const other = tempHome("holon-test-", { sqlite: true });
      const refused = await runCli(["serve", "--port", "0", "--home", other], {
        env: { HOLON_DATABASE_URL: url },
        timeoutMs: 30_000,
      });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("database_locked");
      expect(refused.stderr).not.toContain(new URL(url).password || "\u0000");
    } finally {
      const done = new Promise((r) => second.proc.once("exit", r));
      second.proc.kill("SIGTERM");
      await done;
    }
  }, 180_000);
});
