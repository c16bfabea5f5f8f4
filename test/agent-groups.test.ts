// Agent groups: every agent belongs to the root of its supervision chain (a private child to
// its supervisor's group, any other agent to itself), on every path that creates one, and a
// database from before groups gets them by walking the chain. A host recovers and runs
// agents a group at a time (`acquire`): a group's interrupted turns are recovered when it is
// acquired, and another group's are left alone until that one is.
import { openRecords } from "./helpers/raw-store.ts";
import { jsonField } from "../src/store/sql.ts";
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { Store } from "../src/store/db.ts";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import type { AgentRecord } from "../src/domain/agent.ts";
import { reply, type FakeAnswer } from "./fake-provider/server.ts";
import {
  runCli,
  spawnServe,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import {
  configureFakeProvider,
  lastInput,
  requestAgent,
  useFakeProvider,
} from "./helpers/provider.ts";

const fake = useFakeProvider();
let rt: TestRuntime | undefined;
afterEach(async () => {
  await rt?.close();
  rt = undefined;
  fake.setFallback(null);
});

const agentOf = requestAgent;
const last = lastInput;
const hang = (): Promise<FakeAnswer> => new Promise(() => {});
const spawn = (initial: string, extra: Record<string, unknown> = {}) =>
  reply.tools([{ name: "SpawnAgent", arguments: { initial_message: initial, ...extra } }]);

describe("agent groups", () => {
  it("every create path puts an agent in its supervision root's group, shown by HTTP and the CLI", async () => {
    const home = tempHome();
    const userHome = tempHome("holon-user-");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const env = { HOLON_HOME: home, HOME: userHome };
    const set = await runCli(["config", "set", "agents.max_spawn_depth", "2"], { env });
    expect(set.code, set.stderr).toBe(0);
    rt = await startRuntime({ home, env: { ...process.env, ...env } });
    const r = rt;
    // main spawns a private child (which spawns a private grandchild) and a public agent
    // (which spawns a private child of its own); the rest answers plainly.
    fake.setFallback((req): FakeAnswer => {
      const who = agentOf(req);
      const l = last(req);
      if (l.type === "function_call_output") return reply.text("spawned");
      if (who === "main" && l.text.includes("PARENT-GO"))
        return reply.tools([
          { name: "SpawnAgent", arguments: { initial_message: "JOB-C: delegate" }, call_id: "s1" },
          {
            name: "SpawnAgent",
            arguments: { preset: "public_named", agent_id: "pub", initial_message: "BOOT-P" },
            call_id: "s2",
          },
        ]);
      // (main's own later messages carry its child's job in the report; only the child spawns)
      if (who !== "main" && l.text.includes("JOB-C")) return spawn("JOB-G: the grandchild's job");
      if (who === "pub" && l.text.includes("BOOT-P")) return spawn("JOB-Q: pub's child's job");
      return reply.text("done");
    });
    const prompted = await r.req("POST", "/control/agents/main/prompt", { text: "PARENT-GO" });
    expect(prompted.status, JSON.stringify(prompted.json)).toBe(202);
    const all = async () =>
      (await r.req("GET", "/agents/list?all=true")).json.agents as {
        agent_id: string;
        group_id: string;
        visibility: string;
        lineage_parent_agent_id: string | null;
      }[];
    const agents = await waitFor(
      async () => {
        const list = await all();
        return list.length === 5 ? list : undefined;
      },
      { what: "main's child and grandchild, pub and pub's child", timeoutMs: 30_000 },
    );
    const byParent = (parent: string) =>
      agents.find((a) => a.lineage_parent_agent_id === parent && a.visibility === "private")!;
    const child = byParent("main");
    const grandchild = byParent(child.agent_id);
    const pubChild = byParent("pub");
    expect(Object.fromEntries(agents.map((a) => [a.agent_id, a.group_id]))).toEqual({
      main: "main",
      [child.agent_id]: "main",
      [grandchild.agent_id]: "main", // the root's group, two links up
      pub: "pub", // a public child is its own root
      [pubChild.agent_id]: "pub",
    });

    // The operator's create (CLI), a template, and a `holon run` temporary agent: own roots.
    const created = await runCli(["agent", "create", "solo"], { env });
    expect(created.code, created.stderr).toBe(0);
    const templated = await runCli(
      ["agent", "create", "reviewer", "--template", "holon-developer"],
      { env },
    );
    expect(templated.code, templated.stderr).toBe(0);
    const run = await runCli(["run", "--json", "a one-shot question"], { env });
    expect(run.code, run.stderr).toBe(0);
    const runAgent = JSON.parse(run.stdout).agent_id as string;
    expect(runAgent).toMatch(/^run-/);
    for (const id of ["solo", "reviewer", runAgent]) {
      const status = await r.req("GET", `/control/agents/${id}/status`);
      expect(status.json.group_id, id).toBe(id);
    }

    // The same group in every view: status, AgentGet, the CLI, and the stored column.
    const status = await r.req("GET", `/control/agents/${grandchild.agent_id}/status`);
    expect(status.json).toMatchObject({ group_id: "main", supervisor_agent_id: child.agent_id });
    const got = await r.req("GET", `/control/agents/${grandchild.agent_id}/agent`);
    expect(got.json.agent.identity.group_id).toBe("main");
    expect((await r.req("GET", "/agents/pub/status")).json.group_id).toBe("pub");
    const cliGet = await runCli(["agent", "get", pubChild.agent_id], { env });
    expect(cliGet.code, cliGet.stderr).toBe(0);
    expect(cliGet.stdout).toMatch(/^group: +pub$/m);
    const cliStatus = await runCli(["agent", "status", grandchild.agent_id], { env });
    expect(cliStatus.code, cliStatus.stderr).toBe(0);
    expect(cliStatus.stdout).toMatch(/^group: +main$/m);
    const db = r.host.store.db;
    const rows = db
      .prepare(
        `SELECT agent_id, group_id, ${jsonField(db)("data", "group_id")} AS json FROM agents`,
      )
      .all() as { agent_id: string; group_id: string; json: string }[];
    expect(rows.map((r) => r.agent_id)).toHaveLength(8);
    for (const row of rows) expect(row.json, row.agent_id).toBe(row.group_id);
    // Each agent_created event names the group too, as the record does.
    for (const row of rows) {
      const created = (await r.host.store.events.after(row.agent_id, 0, 50)).find(
        (e) => e.type === "agent_created",
      );
      expect(created?.payload.group_id, row.agent_id).toBe(row.group_id);
    }

    // A group never changes: a write that would move an agent is refused, nothing changes.
    const store = r.host.store;
    const rec = (await store.agents.get(grandchild.agent_id))!;
    await expect(
      async () =>
        await store.tx(async () => await store.agents.put({ ...rec, group_id: rec.agent_id })),
    ).rejects.toThrow(/a group never changes/);
    expect((await store.agents.get(grandchild.agent_id))!.group_id).toBe("main");
  }, 90_000);

  it("a database from before groups gets each agent's group by walking the supervision chain", async () => {
    // A SQLite layout migration: the database is built at migration 13 by hand (Postgres
    // starts at the current schema; store-pg.test.ts covers its schema).
    const home = tempHome("holon-test-", { sqlite: true });
    const path = join(home, "holon.db");
    const db = new DatabaseSync(path);
    db.exec(
      "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
    );
    for (const m of MIGRATIONS.filter((m) => m.version <= 13)) {
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations VALUES (?, ?, ?)").run(m.version, m.name, "x");
    }
    const record = (
      id: string,
      visibility: "public" | "private",
      supervisor?: string,
    ): Omit<AgentRecord, "group_id"> => ({
      agent_id: id,
      agent_home: join(home, "agents", id),
      kind: id === "main" ? "default" : supervisor ? "child" : "named",
      visibility,
      ownership: supervisor ? "parent_supervised" : "self_owned",
      profile_preset: visibility === "public" ? "public_named" : "private_child",
      status: "awake_idle",
      created_at: "2026-11-01T00:00:00.000Z",
      updated_at: "2026-11-01T00:00:00.000Z",
      total_message_count: 0,
      total_input_tokens: 0,
      total_output_tokens: 0,
      total_model_rounds: 0,
      ...(supervisor
        ? { supervisor_agent_id: supervisor, lineage_parent_agent_id: supervisor }
        : {}),
    });
    const old = [
      record("main", "public"),
      record("main-c1", "private", "main"),
      record("main-c1-g1", "private", "main-c1"), // a grandchild, listed before its parent's parent
      record("a-deep", "private", "main-c1-g1"),
      record("pub", "public"),
      record("pub-q", "private", "pub"),
      // A public agent spawned by a child: its own root, and a root for its own children.
      { ...record("zeta", "public"), lineage_parent_agent_id: "main-c1" },
      record("zeta-k", "private", "zeta"),
      record("run-x", "private"), // a `holon run` temporary agent
      record("orphan", "private", "gone"), // its supervisor's row is gone
      record("loop-a", "private", "loop-b"), // a circular chain (never written, but possible)
      record("loop-b", "private", "loop-a"),
    ];
    const insert = db.prepare("INSERT INTO agents (agent_id, data) VALUES (?, ?)");
    for (const a of old) insert.run(a.agent_id, JSON.stringify(a));
    db.close();

    const store = new Store(path, systemClock, randomIds);
    try {
      const groups = Object.fromEntries(
        (
          store.db.prepare("SELECT agent_id, group_id FROM agents ORDER BY agent_id").all() as {
            agent_id: string;
            group_id: string;
          }[]
        ).map((r) => [r.agent_id, r.group_id]),
      );
      expect(groups).toEqual({
        main: "main",
        "main-c1": "main",
        "main-c1-g1": "main",
        "a-deep": "main",
        pub: "pub",
        "pub-q": "pub",
        zeta: "zeta",
        "zeta-k": "zeta",
        "run-x": "run-x",
        orphan: "orphan",
        "loop-a": "loop-a",
        "loop-b": "loop-b",
      });
      // The records read back whole, group included, and keep every other field.
      for (const a of old) {
        expect(await store.agents.get(a.agent_id)).toEqual({ ...a, group_id: groups[a.agent_id] });
      }
      expect(await store.agents.groupIds()).toEqual(
        ["loop-a", "loop-b", "main", "orphan", "pub", "run-x", "zeta"].sort(),
      );
      expect((await store.agents.inGroups(["main"])).ids).toEqual([
        "a-deep",
        "main",
        "main-c1",
        "main-c1-g1",
      ]);
    } finally {
      store.close();
    }
    // A host starts on the upgraded home and creates agents in the groups it now keeps.
    const host = await RuntimeHost.open({ home, autostartAgents: false });
    try {
      expect(
        await host.agents.create("later", { visibility: "private", supervisor_agent_id: "pub-q" }),
      ).toMatchObject({ group_id: "pub" });
    } finally {
      await host.shutdown();
    }
  });

  it("acquire recovers one group's interrupted turns and leaves another group's until it is acquired", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // Every turn stays mid-call to the model until the host dies; alpha first spawns a
    // private child, so alpha's group holds two turns in flight.
    fake.setFallback((req): Promise<FakeAnswer> | FakeAnswer => {
      const l = last(req);
      if (agentOf(req) === "alpha" && l.type !== "function_call_output" && l.text.includes("GO"))
        return spawn("JOB-A: work until stopped");
      return hang();
    });
    const serve = await spawnServe(home);
    const post = async (path: string, body: unknown) => {
      const res = await fetch(serve.url + path, {
        method: "POST",
        headers: { ...serve.auth, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status, await res.clone().text()).toBeLessThan(300);
    };
    const processing = () => {
      const raw = openRecords(home);
      try {
        return raw
          .prepare(
            "SELECT m.agent_id, m.id, a.group_id FROM messages m JOIN agents a USING (agent_id) WHERE m.status = 'processing' ORDER BY m.agent_id",
          )
          .all() as { agent_id: string; id: string; group_id: string }[];
      } finally {
        raw.close();
      }
    };
    let midTurn: ReturnType<typeof processing> = [];
    try {
      await post("/control/agents/alpha/create", {});
      await post("/control/agents/beta/create", {});
      await post("/control/agents/alpha/prompt", { text: "GO alpha" });
      await post("/control/agents/beta/prompt", { text: "GO beta" });
      midTurn = await waitFor(() => (processing().length === 3 ? processing() : undefined), {
        what: "three turns in flight (alpha, alpha's child, beta)",
        timeoutMs: 45_000,
      });
    } finally {
      const exited = new Promise((r) => serve.proc.once("exit", r));
      serve.proc.kill("SIGKILL");
      await exited;
    }
    const child = midTurn.find((m) => m.agent_id !== "alpha" && m.agent_id !== "beta")!;
    expect(midTurn.map((m) => [m.agent_id, m.group_id])).toEqual(
      [
        ["alpha", "alpha"],
        [child.agent_id, "alpha"],
        ["beta", "beta"],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );

    const host = await RuntimeHost.open({ home, acquireGroups: false });
    try {
      const store = host.store;
      const status = async (id: string) => (await store.messages.get(id))!.status;
      const interrupted = async (agentId: string) =>
        (await store.events.after(agentId, 0, 1000))
          .filter((e) => e.type === "message_interrupted")
          .map((e) => (e.payload as { message_id: string }).message_id);
      // Nothing is recovered before its group is acquired.
      for (const m of midTurn) expect(await status(m.id), m.agent_id).toBe("processing");
      expect((await store.agents.get("beta"))!.status).toBe("awake_running");

      await host.acquire(["alpha"]);
      for (const m of midTurn.filter((m) => m.group_id === "alpha")) {
        expect(await status(m.id), m.agent_id).toBe("interrupted");
        expect(await interrupted(m.agent_id)).toEqual([m.id]);
      }
      expect(host.services.loops.get("alpha")).toBeDefined();
      // The child (in alpha's group) is asked to continue its job, and runs again.
      expect(host.services.loops.get(child.agent_id)).toBeDefined();
      expect(
        (await store.messages.recent(child.agent_id, 5)).some(
          (m) => m.metadata?.restart_resume === true,
        ),
      ).toBe(true);
      const beta = midTurn.find((m) => m.agent_id === "beta")!;
      expect(await status(beta.id)).toBe("processing");
      expect(await interrupted("beta")).toEqual([]);
      expect((await store.agents.get("beta"))!.status).toBe("awake_running");
      expect(host.services.loops.get("beta")).toBeUndefined();

      // Acquiring a group again does nothing: alpha's child is not asked twice.
      const resumes = async () =>
        (await store.messages.recent(child.agent_id, 10)).filter(
          (m) => m.metadata?.restart_resume === true,
        ).length;
      expect(await resumes()).toBe(1);
      await host.acquire(["alpha"]);
      expect(await resumes()).toBe(1);

      await host.acquire(["beta"]);
      expect(await status(beta.id)).toBe("interrupted");
      expect(await interrupted("beta")).toEqual([beta.id]);
      expect((await store.agents.get("beta"))!.status).not.toBe("awake_running");
      expect(host.services.loops.get("beta")).toBeDefined();
    } finally {
      await host.shutdown();
    }
  }, 120_000);
});
