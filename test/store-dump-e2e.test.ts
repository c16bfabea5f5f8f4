// `holon store export | import | verify` as a user runs them, against a real `holon serve`
// and the scripted fake provider: an online export while the host runs; then with the host
// stopped, export, remove the database (the rest of the home stays), import, verify, start
// the host again, and the same agent answers the next prompt with its history intact and
// its event numbers continuing without a gap or a repeat.
import { spawnSync, type ChildProcess } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, spawnServe, tempHome } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { cliTurns } from "./helpers/turns.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

describe("holon store export | import | verify", () => {
  it("a home exported, its database removed and imported, continues the same agent", async () => {
    // About the SQLite file itself (removed and imported again); store-pg-move-e2e.test.ts is
    // the Postgres counterpart.
    const home = tempHome("holon-test-", { sqlite: true });
    const dumps = tempHome("holon-dumps-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: home } });
    const { events, turn } = cliTurns(cli);

    const first = await spawnServe(home);
    procs.push(first.proc);
    fake.enqueue(reply.text("Hello, I am main."), reply.text("The capital is Paris."));
    await turn("hello");
    await turn("what is the capital of France?");
    const timer = await cli("timer", "main", "--in", "2h", "check the deploy");
    expect(timer.code, timer.stderr).toBe(0);
    const trigger = await cli("agent", "trigger", "main");
    expect(trigger.code, trigger.stderr).toBe(0);
    const triggerUrl = trigger.stdout.trim();

    // What an export killed half-way left (its process is gone) is swept by the next export;
    // the snapshot of an export still running (here: this test's own live pid) is kept.
    const deadPid = spawnSync("true").pid!;
    const stale = join(home, `.store-snapshot-${deadPid}-Ab12Cd`);
    const running = join(home, `.store-snapshot-${process.pid}-Ef34Gh`);
    for (const d of [stale, running]) {
      mkdirSync(d, { mode: 0o700 });
      writeFileSync(join(d, "holon.db"), "half a snapshot");
    }

    // Online: the host keeps running; the export reads a snapshot.
    const online = join(dumps, "online");
    const live = await cli("store", "export", online);
    expect(live.code, live.stderr).toBe(0);
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(running)).toBe(true);
    rmSync(running, { recursive: true });
    expect(live.stdout).toContain("(online, from a snapshot)");
    const onlineManifest = JSON.parse(readFileSync(join(online, "manifest.json"), "utf8"));
    expect(onlineManifest.taken).toBe("online");
    expect(onlineManifest.holon_home).toBe(home);
    expect(onlineManifest.tables.find((t: any) => t.name === "timers").rows).toBe(1);
    expect(readdirSync(home).filter((f) => f.startsWith(".store-snapshot"))).toEqual([]);
    // No import while a host runs on the home (it holds the lock).
    const busy = await cli("store", "import", online);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain("home_locked");
    // A verify against the running host reads a snapshot too.
    const liveVerify = await cli("store", "verify", online, "--json");
    expect([0, 1]).toContain(liveVerify.code);
    expect(JSON.parse(liveVerify.stdout).tables).toBe(onlineManifest.tables.length);

    // Stop the host, export, and lose the database (the agent homes stay on disk).
    const before = await events();
    const exited = new Promise((r) => first.proc.once("exit", r));
    first.proc.kill("SIGTERM");
    await exited;
    const dir = join(dumps, "stopped");
    const exp = await cli("store", "export", dir, "--json");
    expect(exp.code, exp.stderr).toBe(0);
    const manifest = JSON.parse(exp.stdout);
    expect(manifest.taken).toBe("stopped");
    const newest = manifest.agents.main.newest_event_seq as number;
    expect(newest).toBe(Math.max(...before.map((e) => e.event_seq)));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    // What is in the database is in the dump. Not the control token, nor provider keys
    // (config and credentials files); but the external trigger's token is, on purpose (the
    // database keeps it so the URL can be shown again): the docs say to guard a dump as the
    // database itself.
    const everything = readdirSync(dir)
      .map((f) => readFileSync(join(dir, f), "utf8"))
      .join("\n");
    const controlToken = first.auth.authorization!.replace(/^Bearer /, "");
    expect(controlToken.length).toBeGreaterThan(16);
    expect(everything).not.toContain(controlToken);
    const triggerToken = triggerUrl.split("/").at(-1)!;
    expect(triggerToken.length).toBeGreaterThan(16);
    expect(everything).toContain(triggerToken);
    for (const suffix of ["", "-wal", "-shm"])
      rmSync(join(home, "holon.db" + suffix), { force: true });
    expect(existsSync(join(home, "agents", "main"))).toBe(true);

    // Refused: a dump imported under another path.
    const other = tempHome();
    const elsewhere = await runCli(["store", "import", dir, "--home", other]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain("the paths must match");
    expect(elsewhere.stderr).toContain("dump_home_mismatch");
    expect(existsSync(join(other, "holon.db"))).toBe(false);

    const imp = await cli("store", "import", dir);
    expect(imp.code, imp.stderr).toBe(0);
    expect(imp.stdout).toMatch(/^imported \d+ tables \(\d+ rows, schema \d+\) into /);
    const again = await cli("store", "import", dir);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("import_target_not_empty");
    const verify = await cli("store", "verify", dir);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/^identical: \d+ tables, \d+ rows\n$/);

    // The host starts on the imported database; the same agent continues.
    const second = await spawnServe(home);
    procs.push(second.proc);
    try {
      const list = await cli("timer", "list", "main");
      expect(list.stdout).toContain("check the deploy");
      // The trigger URL handed out before the move still names the same capability.
      const shown = await cli("agent", "trigger", "main");
      expect(shown.stdout.trim().split("/").at(-1)).toBe(triggerToken);
      fake.enqueue(reply.text("Yes, still here."));
      await turn("are you still there?");
      const last = fake.requests.at(-1)!;
      // The conversation before the move is in the prompt of the turn after it.
      expect(JSON.stringify(last.body)).toContain("The capital is Paris.");
      const after = await events();
      const seqs = after.map((e) => e.event_seq).sort((a, b) => a - b);
      expect(seqs[0]).toBe(1);
      seqs.forEach((s, i) => expect(s).toBe(i + 1)); // no gap, no repeat
      expect(seqs.at(-1)!).toBeGreaterThan(newest);
      for (const e of before) {
        expect(after.find((a) => a.event_seq === e.event_seq)?.id).toBe(e.id);
      }
      const tr = await cli("transcript", "--json", "-n", "200");
      const text = tr.stdout;
      expect(text).toContain("The capital is Paris.");
      expect(text).toContain("Yes, still here.");
      // Now the database has moved on from the dump, and verify says where.
      const moved = await cli("store", "verify", dir);
      expect(moved.code).toBe(1);
      expect(moved.stdout).toMatch(/agent main newest event_seq +\d+ +\d+/);
    } finally {
      const done = new Promise((r) => second.proc.once("exit", r));
      second.proc.kill("SIGTERM");
      await done;
    }
  }, 180_000);
});
