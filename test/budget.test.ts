// Budgets end to end with the scripted fake model: a work item stops at its line and waits
// blocked across a SIGKILL until the operator raises it, and the ledger counts every round
// once; a daily budget exhausted at 23:59 resumes after midnight (injected clock); the
// kill switch stops three busy agents before their next provider call; a child's carved
// budget runs out, is raised, and its unspent rest returns to the parent; `holon run`
// exits 3 at its line; bad input is refused with nothing stored.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../src/domain/clock.ts";
import { parseCount, parseDuration, parseUsd, windowOf } from "../src/domain/budget.ts";
import { reply, type RecordedRequest } from "./fake-provider/server.ts";
import { runCli, spawnServe, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

/** A tool call the registry does not know: an error result, and the turn goes on. */
const busy = (input: number, output = 1000) =>
  reply.tools([{ name: "NoSuchTool", arguments: {} }], {
    usage: { input_tokens: input, output_tokens: output },
  });

async function home(priced = false): Promise<string> {
  const h = tempHome();
  await configureFakeProvider(h, "openai_responses", fake.baseUrl("openai"));
  if (priced) {
    const p = join(h, "config.json");
    const cfg = JSON.parse(readFileSync(p, "utf8"));
    cfg.models = {
      catalog: { "fake/test-model": { pricing: { input_per_mtok: 2, output_per_mtok: 10 } } },
    };
    writeFileSync(p, JSON.stringify(cfg, null, 2));
  }
  return h;
}

function testClock(start: string): Clock & { set(iso: string): void } {
  let t = Date.parse(start);
  return { now: () => new Date(t), sleep: systemClock.sleep, set: (iso) => (t = Date.parse(iso)) };
}

const has = (r: RecordedRequest, marker: string) => r.raw.includes(marker);

describe("parsing what people type", () => {
  it.each([
    ["500k", 500_000],
    ["2M", 2_000_000],
    ["1.5m", 1_500_000],
    ["20000", 20_000],
  ])("count %s", (text, n) => expect(parseCount(text, "--tokens")).toBe(n));
  it.each(["-5", "abc", "", "5x", "1e3"])("refuses count %j", (text) =>
    expect(() => parseCount(text, "--tokens")).toThrow(/--tokens must be/),
  );
  it("dollars and durations", () => {
    expect(parseUsd("$0.50", "--usd")).toBe(0.5);
    expect(() => parseUsd("-1", "--usd")).toThrow(/--usd must be/);
    expect(parseDuration("1h30m", "--time")).toBe(90 * 60_000);
    expect(() => parseDuration("2 hours", "--time")).toThrow(/--time must be/);
  });
  it("calendar windows follow the time zone; weeks start on Monday", () => {
    const at = new Date("2026-01-10T23:59:00Z"); // a Saturday
    expect(windowOf("day", at, "UTC")).toMatchObject({ key: "day:2026-01-10" });
    expect(windowOf("day", at, "UTC").end.toISOString()).toBe("2026-01-11T00:00:00.000Z");
    // 00:59 on the 11th in Berlin: already the next day there.
    const berlin = windowOf("day", at, "Europe/Berlin");
    expect(berlin.key).toBe("day:2026-01-11");
    expect(berlin.start.toISOString()).toBe("2026-01-10T23:00:00.000Z");
    expect(windowOf("week", at, "UTC").start.toISOString()).toBe("2026-01-05T00:00:00.000Z");
    expect(windowOf("month", at, "UTC").end.toISOString()).toBe("2026-02-01T00:00:00.000Z");
  });
});

describe("budgets end to end", () => {
  it("a work item with a 50k budget stops at the line, survives a SIGKILL, and finishes when raised; every round counted once", async () => {
    const h = await home();
    const env = { HOLON_HOME: h };
    let serve = await spawnServe(h);
    try {
      // 15k in + 1k out a round: three rounds (48k) fit, the fourth (48k + its input and
      // 8192 max output) would cross 50k.
      fake.setFallback(() => busy(15_000));
      const add = await runCli(
        [
          "work",
          "add",
          "main",
          "port the CLI",
          "--budget-tokens",
          "50k",
          "--budget-time",
          "2h",
          "--json",
        ],
        { env },
      );
      expect(add.code, add.stderr).toBe(0);
      const itemId = JSON.parse(add.stdout).work_item.id as string;
      const get = (path: string) =>
        fetch(serve.url + path, { headers: serve.auth }).then((r) => r.json() as Promise<any>);
      const held = await waitFor(
        async () => {
          const r = await get(`/agents/main/work-items/${itemId}`);
          return r.budget?.hold ? r : undefined;
        },
        { what: "the item's budget hold", timeoutMs: 20_000 },
      );
      // Whole rounds of 16k up to the line: the next one's estimate would cross it.
      expect(held.budget.spent.tokens % 16_000).toBe(0);
      expect(held.budget.spent.tokens).toBeGreaterThanOrEqual(32_000);
      expect(held.budget.spent.tokens).toBeLessThanOrEqual(50_000);
      const spentAtLine = held.budget.spent.tokens as number;
      expect(held.budget.hold).toMatchObject({ scope: `work_item:${itemId}`, dimension: "tokens" });
      expect(held.work_item.readiness).toBe("blocked");
      const sent = fake.requests.length;
      const shown = await runCli(["work", "show", "main", itemId], { env });
      expect(shown.stdout).toContain(`tokens: ${spentAtLine} spent / 0 reserved / 50000 limit`);
      expect(shown.stdout).toContain("halted:");

      // SIGKILL while the item waits; the hold is durable.
      serve.proc.kill("SIGKILL");
      await new Promise((r) => serve.proc.once("exit", r));
      serve = await spawnServe(h);
      const after = await get(`/agents/main/work-items/${itemId}`);
      expect(after.budget.hold).toMatchObject({ scope: `work_item:${itemId}` });
      expect(fake.requests.length).toBe(sent); // nothing ran on the held item after restart
      // The stop is an ask in the operator's inbox, across the restart; it is answered by
      // raising the budget, not by `holon asks answer`.
      const inbox = await runCli(["asks", "--json"], { env });
      expect(inbox.code, inbox.stderr).toBe(0);
      const budgetAsk = (JSON.parse(inbox.stdout) as any[]).find(
        (a) => a.kind === "budget" && a.work_item_id === itemId,
      );
      expect(budgetAsk).toMatchObject({ state: "pending", scope: "work_item" });
      const refused = await runCli(["asks", "answer", budgetAsk.id, "go on"], { env });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("holon budget raise main --scope");

      // The operator raises it: the item runs again and completes.
      fake.setFallback((req) =>
        has(req, "CompleteWorkItem") && has(req, '"call_id"')
          ? reply.text("Done.", { input_tokens: 100, output_tokens: 10 })
          : reply.tools([{ name: "CompleteWorkItem", arguments: { work_item_id: itemId } }], {
              text: "The CLI is ported.",
              usage: { input_tokens: 100, output_tokens: 10 },
            }),
      );
      const raised = await runCli(
        ["budget", "raise", "main", "--scope", `work_item:${itemId}`, "--tokens", "100k"],
        { env },
      );
      expect(raised.code, raised.stderr).toBe(0);
      const closed = (await get(`/control/asks/${budgetAsk.id}`)).ask;
      expect(closed.state).toBe("withdrawn");
      await waitFor(
        async () =>
          (await get(`/agents/main/work-items/${itemId}`)).work_item.state === "completed",
        { what: "the item to complete", timeoutMs: 20_000 },
      );
      // The item completes in the round that calls CompleteWorkItem; the run's last round (its
      // answer to that call) may still be on its way, so the ledger is read once the agent
      // has gone back to sleep.
      await waitFor(async () => (await get("/agents/main/status")).status === "asleep", {
        what: "the agent to sleep after the item",
        timeoutMs: 20_000,
      });
      fake.setFallback(null);
      // Every provider request that answered is one ledger row; no (run, round) twice.
      const rounds = (await get("/agents/main/usage/rounds?limit=1000")).rounds as any[];
      const answered = fake.requests.filter((r) => r.path.endsWith("/responses")).length;
      expect(rounds.length).toBe(answered);
      const keys = new Set(rounds.map((r) => `${r.run_id}#${r.round}`));
      expect(keys.size).toBe(rounds.length);
      // The item's rows: the rounds up to the line, then those after the raise.
      expect(rounds.filter((r) => r.work_item_id === itemId).length).toBeGreaterThan(
        spentAtLine / 16_000,
      );
    } finally {
      fake.setFallback(null);
      serve.proc.kill("SIGKILL");
    }
  }, 60_000);

  it("a daily budget exhausted at 23:59 resumes by itself after midnight", async () => {
    const h = await home();
    const clock = testClock("2026-01-10T23:59:00.000Z");
    const rt = await startRuntime({ home: h, clock });
    try {
      const set = await rt.req("POST", "/control/agents/main/budget", {
        period: "day",
        limits: { rounds: 5 },
      });
      expect(set.status, JSON.stringify(set.json)).toBe(200);
      let n = 0;
      fake.setFallback(() =>
        ++n <= 6 ? busy(1000) : reply.text("finished", { input_tokens: 10 }),
      );
      const before = fake.requests.length;
      const p = await rt.req("POST", "/control/agents/main/prompt", { text: "long job" });
      expect(p.status).toBe(202);
      const hold = await waitFor(
        async () => (await rt.host.store.agents.get("main"))?.budget_hold,
        {
          what: "the daily hold",
        },
      );
      expect(hold).toMatchObject({
        scope: "agent:main:day",
        dimension: "rounds",
        until: "2026-01-11T00:00:00.000Z",
      });
      expect(n).toBe(5);
      // At 80% (4 of 5 rounds) the agent was told once, after the conversation.
      const sent = fake.requests.slice(before).map((r) => r.raw.includes("Budget note:"));
      expect(sent).toEqual([false, false, false, false, true]);
      // Ingress is kept while held; no model call runs.
      const later = await rt.req("POST", "/control/agents/main/prompt", { text: "and this" });
      expect(later.status).toBe(202);
      await rt.host.services.scheduler.fireDue(); // not due yet
      expect((await rt.host.store.agents.get("main"))?.budget_hold).toBeDefined();
      expect((await rt.host.store.messages.get(later.json.message_id))?.status).toBe("queued");
      expect(n).toBe(5);

      clock.set("2026-01-11T00:00:01.000Z");
      expect(await rt.host.services.scheduler.fireDue()).toBe(1);
      expect((await rt.host.store.agents.get("main"))?.budget_hold).toBeUndefined();
      await waitFor(
        async () =>
          (await rt.host.store.messages.get(later.json.message_id))?.status === "processed",
        {
          what: "the kept prompt to run after midnight",
        },
      );
      expect(n).toBeGreaterThan(5);
      const types = (await rt.host.store.events.after("main", 0, 10_000)).map((e) => e.type);
      expect(types).toContain("budget_exhausted");
      expect(types).toContain("budget_hold_cleared");
      expect(types.filter((t) => t === "budget_warning")).toHaveLength(1);
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });

  it("budget freeze --all stops three busy agents before their next provider call", async () => {
    const h = await home();
    const rt = await startRuntime({ home: h });
    const env = { HOLON_HOME: h };
    try {
      for (const id of ["a1", "a2"]) {
        const c = await rt.req("POST", `/control/agents/${id}/create`, {});
        expect(c.status, JSON.stringify(c.json)).toBeLessThan(300);
      }
      // Each agent's first request is held open until the freeze is in place.
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let inFlight = 0;
      fake.setFallback(async () => {
        inFlight++;
        await gate;
        return busy(100);
      });
      const before = fake.requests.length;
      for (const id of ["main", "a1", "a2"]) {
        const r = await rt.req("POST", `/control/agents/${id}/prompt`, { text: "keep going" });
        expect(r.status).toBe(202);
      }
      await waitFor(() => inFlight === 3, { what: "three agents mid-call" });
      const frozen = await runCli(["budget", "freeze", "--all"], { env });
      expect(frozen.code, frozen.stderr).toBe(0);
      expect(frozen.stdout).toContain("froze");
      release();
      for (const id of ["main", "a1", "a2"]) {
        await waitFor(
          async () =>
            (await rt.host.store.agents.get(id))?.closure?.waiting_reason ===
            "awaiting_operator_input",
          { what: `${id} to stop` },
        );
        expect((await rt.host.store.agents.get(id))?.budget_hold).toMatchObject({
          reason: "frozen",
        });
      }
      // One call each (the one in flight), none after the freeze.
      expect(fake.requests.length - before).toBe(3);

      // A one-shot run on a held agent never waits: it fails at once with exit code 3.
      const run = await runCli(["run", "--agent", "a1", "--json", "hello"], { env });
      expect(run.code, run.stderr).toBe(3);
      expect(JSON.parse(run.stdout).failure_artifact.kind).toBe("budget_exhausted");
      const status = await runCli(["status", "a1"], { env });
      expect(status.stdout).toContain("held: the operator froze all model calls");
      fake.setFallback(() => reply.text("ok", { input_tokens: 10 }));
      const unfrozen = await runCli(["budget", "unfreeze", "--all"], { env });
      expect(unfrozen.code, unfrozen.stderr).toBe(0);
      await waitFor(async () => !(await rt.host.store.agents.list()).some((a) => a.budget_hold), {
        what: "holds to clear",
      });
      await waitFor(() => fake.requests.length - before >= 6, { what: "the agents to resume" });
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });

  it("a child with a carved budget exhausts it, is raised, finishes, and the rest returns to the parent", async () => {
    const h = await home();
    const rt = await startRuntime({ home: h });
    try {
      const set = await rt.req("POST", "/control/agents/main/budget", {
        limits: { tokens: 200_000 },
      });
      expect(set.status).toBe(200);
      let childRounds = 0;
      let raised = false;
      let parentSpawned = false;
      fake.setFallback((req) => {
        if (String(req.body?.prompt_cache_key ?? "").startsWith("holon-main-")) {
          if (!parentSpawned) {
            parentSpawned = true;
            return reply.tools(
              [
                {
                  name: "SpawnAgent",
                  arguments: {
                    initial_message: "CHILDJOB count things",
                    budget: { tokens: 30_000 },
                  },
                },
              ],
              { usage: { input_tokens: 1000, output_tokens: 100 } },
            );
          }
          return reply.text("parent resting", { input_tokens: 1000, output_tokens: 100 });
        }
        // The child: 12k a round until the operator raises it, then its answer.
        if (!raised) {
          childRounds++;
          return busy(11_000);
        }
        return reply.text("child done", { input_tokens: 1000, output_tokens: 100 });
      });
      const p = await rt.req("POST", "/control/agents/main/prompt", { text: "go" });
      expect(p.status).toBe(202);
      const child = await waitFor(
        async () =>
          (await rt.host.store.agents.list()).find((a) =>
            a.budget_hold?.scope.startsWith("reservation:"),
          ),
        { what: "the child's reservation hold" },
      );
      // 12k a round, whole rounds up to the line of 30k.
      expect(childRounds).toBeGreaterThanOrEqual(1);
      const childSpent = childRounds * 12_000;
      expect(childSpent).toBeLessThanOrEqual(30_000);
      const parentView = (await rt.req("GET", "/agents/main/budget")).json.budget;
      const total = parentView.scopes.find((s: any) => s.scope === "agent:main");
      expect(total.reserved.tokens).toBe(30_000 - childSpent);
      expect(total.spent.tokens).toBe(1100 + childSpent + 1100);
      const childView = (await rt.req("GET", `/agents/${child.agent_id}/budget`)).json.budget;
      expect(childView.hold.scope).toBe(`reservation:${child.agent_id}`);

      raised = true;
      const r = await runCli(["budget", "raise", child.agent_id, "--tokens", "20000"], {
        env: { HOLON_HOME: h },
      });
      expect(r.code, r.stderr).toBe(0);
      await waitFor(
        async () =>
          (await rt.host.store.agents.get(child.agent_id))?.budget_reservation?.returned_at,
        {
          what: "the reservation to be returned",
        },
      );
      const after = (await rt.req("GET", "/agents/main/budget")).json.budget;
      const t = after.scopes.find((s: any) => s.scope === "agent:main");
      expect(t.reserved.tokens ?? 0).toBe(0);
      // The child's spend stays in the parent's; the unspent rest is the parent's again.
      expect(t.spent.tokens).toBeGreaterThanOrEqual(childSpent + 1100);
      const types = (await rt.host.store.events.after("main", 0, 10_000)).map((e) => e.type);
      expect(types).toContain("budget_reservation_returned");
    } finally {
      fake.setFallback(null);
      await rt.close();
    }
  });

  it("holon run --max-tokens exits 3 with a failure artifact at the line", async () => {
    const h = await home();
    fake.setFallback(() => busy(5000, 500));
    try {
      const r = await runCli(["run", "--max-tokens", "20k", "--json", "count to a million"], {
        env: { HOLON_HOME: h },
        cwd: tempHome("holon-ws-"),
      });
      expect(r.code, r.stderr).toBe(3);
      const out = JSON.parse(r.stdout);
      expect(out.ok).toBe(false);
      expect(out.failure_artifact).toMatchObject({ kind: "budget_exhausted" });
      expect(out.failure_artifact.summary).toMatch(/budget exhausted/);
      // Whole rounds of 5.5k, stopped before the next one's estimate would cross 20k.
      const spent = out.token_usage.input_tokens + out.token_usage.output_tokens;
      expect(spent % 5500).toBe(0);
      expect(spent).toBeGreaterThan(0);
      expect(spent).toBeLessThanOrEqual(20_000);
    } finally {
      fake.setFallback(null);
    }
  });

  it("bad budgets are refused clearly and nothing is stored half-way", async () => {
    const h = await home();
    const env = { HOLON_HOME: h };
    const rt = await startRuntime({ home: h });
    try {
      for (const args of [
        ["budget", "set", "main", "--tokens", "-5"],
        ["budget", "set", "main", "--tokens", "lots"],
        ["budget", "set", "main", "--tokens", "1M", "--per", "fortnight"],
        ["budget", "set", "main", "--time", "2 hours"],
      ]) {
        const r = await runCli(args, { env });
        expect(r.code, args.join(" ")).toBe(1);
        expect(r.stderr).toMatch(/error: /);
      }
      // A dollar budget on an unpriced model: refused at set time.
      const usd = await runCli(["budget", "set", "main", "--usd", "5", "--per", "week"], { env });
      expect(usd.code).toBe(1);
      expect(usd.stderr).toContain("has none in the model catalog");
      // Over HTTP: stable kinds.
      const neg = await rt.req("POST", "/control/agents/main/budget", { limits: { tokens: -1 } });
      expect(neg.status).toBe(400);
      expect(neg.json.error.kind).toBe("invalid_budget");
      const unpriced = await rt.req("POST", "/control/agents/main/budget", { limits: { usd: 1 } });
      expect(unpriced.json.error.kind).toBe("unpriced_model");
      const empty = await rt.req("POST", "/control/agents/main/budget", { limits: {} });
      expect(empty.json.error.kind).toBe("invalid_budget");
      const noAuth = await rt.req(
        "POST",
        "/control/agents/main/budget",
        { limits: { tokens: 5 } },
        { authorization: "" },
      );
      expect(noAuth.status).toBe(401);
      const wi = await runCli(["work", "add", "main", "x", "--budget-usd", "1"], { env });
      expect(wi.code).toBe(1);
      const raiseNothing = await runCli(["budget", "raise", "main", "--tokens", "1M"], { env });
      expect(raiseNothing.code).toBe(1);
      expect(raiseNothing.stderr).toContain("not held by a budget");
      const run = await runCli(["run", "--max-budget-usd", "0.50", "hi"], {
        env,
        cwd: tempHome("holon-ws-"),
      });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("model catalog");

      const main = (await rt.host.store.agents.get("main"))!;
      expect(main.budgets).toBeUndefined();
      expect(await rt.host.store.workItems.count("main", "open")).toBe(0);
      expect((await rt.host.store.agents.list()).map((a) => a.agent_id)).toEqual(["main"]);
      const types = (await rt.host.store.events.after("main", 0, 10_000)).map((e) => e.type);
      expect(types).not.toContain("budget_set");
    } finally {
      await rt.close();
    }
  });

  it("a dollar budget on a priced model is kept, shown and counted in dollars", async () => {
    const h = await home(true);
    const rt = await startRuntime({ home: h });
    try {
      const r = await runCli(
        ["budget", "set", "main", "--usd", "5", "--per", "week", "--tz", "Europe/Berlin"],
        {
          env: { HOLON_HOME: h },
        },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(
        "agent:main:week  usd: $0.0000 spent / $0.0000 reserved / $5.00 limit",
      );
      fake.enqueue(reply.text("hi", { input_tokens: 1000, output_tokens: 100 }));
      const p = await rt.req("POST", "/control/agents/main/prompt", { text: "hello" });
      await waitFor(
        async () => (await rt.host.store.messages.get(p.json.message_id))?.status === "processed",
      );
      const v = (await rt.req("GET", "/agents/main/budget")).json.budget;
      expect(v.time_zone).toBe("Europe/Berlin");
      expect(v.scopes[0].spent.usd).toBeCloseTo((1000 * 2 + 100 * 10) / 1e6, 10);
      const state = await rt.req("GET", "/agents/main/state");
      expect(state.json.agent.budget.scopes[0].limits.usd).toBe(5);
      const usage = await runCli(["usage"], { env: { HOLON_HOME: h } });
      expect(usage.code, usage.stderr).toBe(0);
      expect(usage.stdout).toContain("budget main:");
      expect(usage.stdout).toContain(
        "agent:main:week  usd: $0.0030 spent / $0.0000 reserved / $5.00 limit",
      );
    } finally {
      await rt.close();
    }
  });
});
