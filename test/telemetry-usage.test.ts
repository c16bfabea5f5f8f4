// Cost attribution from the spend ledger through the CLI and GET /usage: a parent works on a
// work item and spawns a child for it; `holon usage --tree` rolls the child's spend up under
// its parent, `holon usage --by work-item` shows what the item cost with its child's calls.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply, type FakeAnswer, type RecordedRequest } from "./fake-provider/server.ts";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

function agentOf(req: RecordedRequest): string {
  const key = String(req.body.prompt_cache_key ?? "");
  return key.slice("holon-".length, key.lastIndexOf("-"));
}
function last(req: RecordedRequest): string {
  const input = req.body.input as unknown[];
  return JSON.stringify(input[input.length - 1]);
}

const MAIN = { input_tokens: 1000, output_tokens: 100 }; // $0.002 at 1 / 10 per Mtok
const CHILD = { input_tokens: 2000, output_tokens: 100 }; // $0.003

describe("usage by work item and as a tree", () => {
  let rt: TestRuntime;
  let home = "";
  let item = "";
  let child = "";

  beforeAll(async () => {
    home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const cfgPath = join(home, "config.json");
    const cfg = JSON.parse(readFileSync(cfgPath, "utf8"));
    cfg.models = {
      catalog: { "fake/test-model": { pricing: { input_per_mtok: 1, output_per_mtok: 10 } } },
    };
    writeFileSync(cfgPath, JSON.stringify(cfg, null, 2));
    rt = await startRuntime({ home });
    fake.setFallback((req): FakeAnswer => {
      const l = last(req);
      if (agentOf(req) !== "main") return reply.text("CHILD DONE", CHILD);
      if (l.includes("GO-COST"))
        return reply.tools(
          [{ name: "CreateWorkItem", arguments: { objective: "OBJ-A build it" }, call_id: "w1" }],
          { usage: MAIN },
        );
      if (l.includes('"w1"')) {
        item = /(wi_\w+)/.exec(l)![1]!;
        return reply.tools(
          [{ name: "PickWorkItem", arguments: { work_item_id: item }, call_id: "w2" }],
          { usage: MAIN },
        );
      }
      if (l.includes('"w2"'))
        return reply.tools(
          [{ name: "SpawnAgent", arguments: { initial_message: "CHILD-JOB" }, call_id: "w3" }],
          { usage: MAIN },
        );
      if (l.includes('"w3"')) {
        child = /Spawned private child ([\w.-]+)\./.exec(l)![1]!;
        return reply.tools([{ name: "Sleep", arguments: {} }], { usage: MAIN });
      }
      return reply.tools([{ name: "Sleep", arguments: {} }], { usage: MAIN });
    });
    expect((await rt.req("POST", "/control/agents/main/prompt", { text: "GO-COST" })).status).toBe(
      202,
    );
    await waitFor(
      async () =>
        (await rt.host.store.messages.withStatus("main", "processed")).some(
          (m) => m.kind === "task_result",
        ),
      { what: "the child's result to come back", timeoutMs: 30_000 },
    );
  }, 60_000);

  afterAll(async () => {
    fake.setFallback(null);
    await rt?.close();
  });

  it("rolls a child's spend up under its parent (--tree)", async () => {
    const r = await rt.req("GET", "/usage?view=tree");
    expect(r.status).toBe(200);
    const main = r.json.tree.find((n: any) => n.agent_id === "main");
    expect(main.children.map((c: any) => c.agent_id)).toEqual([child]);
    const kid = main.children[0];
    expect(kid.own).toMatchObject({ rounds: 1, input_tokens: 2000 });
    expect(kid.total.cost_usd).toBeCloseTo(0.003, 10);
    expect(main.total.rounds).toBe(main.own.rounds + 1);
    expect(main.total.cost_usd).toBeCloseTo(main.own.cost_usd + 0.003, 10);
    expect(main.own.cost_usd).toBeCloseTo(0.002 * main.own.rounds, 10);
    // No private child appears as a root of its own.
    expect(r.json.tree.map((n: any) => n.agent_id)).not.toContain(child);

    const cli = await runCli(["usage", "--tree"], { env: { HOLON_HOME: home } });
    expect(cli.code, cli.stderr).toBe(0);
    const lines = cli.stdout.split("\n");
    const at = lines.findIndex((l) => l.startsWith("main  "));
    expect(lines[at]).toContain(`(itself $${main.own.cost_usd.toFixed(4)}`);
    expect(lines[at + 1]).toMatch(
      new RegExp(`^  ${child.replace(/\./g, "\\.")}  \\$0\\.0030  1 rounds`),
    );
    // One agent's tree takes its descendants in.
    const only = await runCli(["usage", "--tree", "--agent", "main", "--json"], {
      env: { HOLON_HOME: home },
    });
    expect(JSON.parse(only.stdout).total.rounds).toBe(main.total.rounds);
  });

  it("shows what a work item cost with the children spawned for it (--by work-item)", async () => {
    const r = await rt.req("GET", "/usage?view=work_items");
    expect(r.status).toBe(200);
    const wi = r.json.work_items.find((w: any) => w.work_item_id === item);
    expect(wi.objective).toBe("OBJ-A build it");
    expect(wi.own.rounds).toBeGreaterThanOrEqual(1);
    expect(wi.with_children.rounds).toBe(wi.own.rounds + 1);
    expect(wi.with_children.input_tokens).toBe(wi.own.input_tokens + 2000);
    const none = r.json.work_items.find((w: any) => w.work_item_id === null);
    expect(none).toBeDefined(); // the calls before the item was picked, and the child's own
    // Every call is counted once in `own`.
    const owned = r.json.work_items.reduce((a: number, w: any) => a + w.own.rounds, 0);
    expect(owned).toBe(r.json.total.rounds);

    const cli = await runCli(["usage", "--by", "work-item"], { env: { HOLON_HOME: home } });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`${item}  OBJ-A build it`);
    expect(cli.stdout).toContain("with children");
    expect(cli.stdout).toContain("(no work item)");
  });

  it("refuses an unknown view, in the CLI and over HTTP", async () => {
    const bad = await rt.req("GET", "/usage?view=everything");
    expect(bad.status).toBe(400);
    expect(bad.json.error.kind ?? bad.json.kind).toBe("invalid_request");
    const cli = await runCli(["usage", "--by", "agent"], { env: { HOLON_HOME: home } });
    expect(cli.code).not.toBe(0);
    expect(cli.stderr).toContain("--by takes work-item");
  });
});
