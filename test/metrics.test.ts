// GET /metrics: off by default, behind the read rule, counting what providers reported, in
// a format Prometheus itself accepts (promtool, and a real Prometheus scraping it with the
// control token as its credentials file), with agent labels bounded and the names listed in
// docs/observability.md.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  REPO_ROOT,
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type TestRuntime,
} from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

/** `name{labels} value` lines of the text format, as [name, labels, value]. */
function samples(text: string): [string, Record<string, string>, number][] {
  const out: [string, Record<string, string>, number][] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push([m[1]!, labels, Number(m[3])]);
  }
  return out;
}

function sum(text: string, name: string, where: Record<string, string> = {}): number {
  return samples(text)
    .filter(([n, l]) => n === name && Object.entries(where).every(([k, v]) => l[k] === v))
    .reduce((a, [, , v]) => a + v, 0);
}

/** A system tool the test needs: fails under CI when missing, skips (one line) locally. */
function tool(name: string): boolean {
  const found = spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
  if (!found && process.env.CI)
    throw new Error(`${name} is required in CI (apt-get install prometheus)`);
  if (!found) console.log(`skipping: ${name} is not installed (apt-get install prometheus)`);
  return found;
}

describe("metrics", () => {
  let rt: TestRuntime;
  let text = "";
  beforeAll(async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    for (const [k, v] of [
      ["telemetry.metrics.enabled", "true"],
      ["telemetry.metrics.max_agents", "5"],
    ]) {
      const set = await runCli(["config", "set", k!, v!], { env: { HOLON_HOME: home } });
      expect(set.code, set.stderr).toBe(0);
    }
    rt = await startRuntime({ home });
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "echo hi" }, call_id: "c1" }], {
        usage: { input_tokens: 1000, cached_tokens: 400, output_tokens: 30 },
      }),
      reply.text("done", { input_tokens: 1200, cached_tokens: 1000, output_tokens: 5 }),
    );
    const sent = await rt.req("POST", "/control/agents/main/prompt", { text: "run echo" });
    expect(sent.status).toBe(202);
    await waitFor(
      async () =>
        (await rt.host.store.events.query("main", { limit: 50, order: "desc" })).some(
          (e) => e.type === "turn_terminal",
        ),
      { what: "the turn to end" },
    );
    const res = await rt.req("GET", "/metrics");
    expect(res.status).toBe(200);
    text = res.json as string;
  });
  afterAll(async () => {
    await rt?.close();
  });

  it("is off by default", async () => {
    const off = await startRuntime();
    try {
      const res = await off.req("GET", "/metrics");
      expect(res.status).toBe(404);
      expect(res.json.error.kind).toBe("metrics_disabled");
    } finally {
      await off.close();
    }
  });

  it("needs the token over TCP like every read", async () => {
    const res = await fetch(`${rt.url}/metrics`);
    expect(res.status).toBe(401);
  });

  it("counts turns, tool calls and the tokens the provider reported", () => {
    expect(sum(text, "holon_turns_total", { agent: "main", kind: "completed" })).toBe(1);
    expect(sum(text, "holon_tool_calls_total", { tool: "ExecCommand", status: "success" })).toBe(1);
    expect(sum(text, "holon_tokens_total", { agent: "main", type: "input" })).toBe(2200);
    expect(sum(text, "holon_tokens_total", { agent: "main", type: "cached_input" })).toBe(1400);
    expect(sum(text, "holon_tokens_total", { agent: "main", type: "output" })).toBe(35);
    expect(
      sum(text, "gen_ai_client_token_usage_sum", {
        gen_ai_provider_name: "fake",
        gen_ai_request_model: "test-model",
        gen_ai_token_type: "input",
      }),
    ).toBe(2200);
    expect(sum(text, "gen_ai_client_operation_duration_seconds_count")).toBe(2);
    expect(sum(text, "holon_prompt_cache_hit_ratio", { agent: "main" })).toBeCloseTo(1400 / 2200);
    expect(sum(text, "holon_agents")).toBeGreaterThanOrEqual(1);
    expect(
      sum(text, "holon_messages_admitted_total", { agent: "main", kind: "operator_prompt" }),
    ).toBe(1);
  });

  it("every family is listed in docs/observability.md, and nothing else is", () => {
    const served = new Set([...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]!));
    const doc = readFileSync(join(REPO_ROOT, "docs/observability.md"), "utf8");
    const listed = new Set([...doc.matchAll(/^\| `([a-z_:]+)`\s+\|/gm)].map((m) => m[1]!));
    expect([...served].sort()).toEqual([...listed].sort());
  });

  it("bounds the agent label: public agents up to the cap, the rest as _other", async () => {
    for (let i = 0; i < 500; i++) await rt.host.agents.create(`load-${i}`, { start: false });
    const res = await rt.req("GET", "/metrics");
    const agents = new Set(
      samples(res.json as string)
        .filter(([n]) => n === "holon_queue_depth")
        .map(([, l]) => l.agent),
    );
    expect(agents.size).toBeLessThanOrEqual(6);
    expect(agents.has("_other")).toBe(true);
    expect(sum(res.json as string, "holon_agents")).toBeGreaterThanOrEqual(501);
  });

  it("passes promtool check metrics", () => {
    if (!tool("promtool")) return;
    const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it(
    "a real Prometheus scrapes it with the control token as credentials",
    { timeout: 60_000 },
    async () => {
      if (!tool("prometheus")) return;
      const dir = mkdtempSync(join(tmpdir(), "holon-prom-"));
      const tokenFile = join(dir, "token");
      writeFileSync(tokenFile, rt.token, { mode: 0o600 });
      const target = new URL(rt.url).host;
      writeFileSync(
        join(dir, "prometheus.yml"),
        [
          "global: { scrape_interval: 1s, evaluation_interval: 1s }",
          "scrape_configs:",
          "  - job_name: holon",
          "    metrics_path: /metrics",
          "    authorization: { type: Bearer, credentials_file: " +
            JSON.stringify(tokenFile) +
            " }",
          `    static_configs: [{ targets: [${JSON.stringify(target)}] }]`,
        ].join("\n"),
      );
      let prom: ChildProcess | undefined;
      try {
        prom = spawn(
          "prometheus",
          [
            `--config.file=${join(dir, "prometheus.yml")}`,
            `--storage.tsdb.path=${join(dir, "data")}`,
            "--web.listen-address=127.0.0.1:0",
          ],
          { stdio: ["ignore", "ignore", "pipe"] },
        );
        let log = "";
        prom.stderr!.on("data", (d) => (log += d));
        // Prometheus logs the address it listens on ("Listening on" … address=127.0.0.1:PORT).
        const addr = await waitFor(
          () => /Listening on.*?address=(127\.0\.0\.1:\d+)/.exec(log)?.[1],
          {
            what: "prometheus to listen",
            timeoutMs: 30_000,
          },
        );
        const query = async (q: string) => {
          const res = await fetch(`http://${addr}/api/v1/query?query=${encodeURIComponent(q)}`);
          if (res.status !== 200) return []; // still starting
          return ((await res.json()) as { data: { result: { value: [number, string] }[] } }).data
            .result;
        };
        const up = await waitFor(
          async () => {
            const r = await query('up{job="holon"}');
            return r[0]?.value[1] === "1" ? r : null;
          },
          { what: "a successful scrape", timeoutMs: 30_000 },
        );
        expect(up.length).toBe(1);
        const turns = await query('holon_turns_total{agent="main"}');
        expect(Number(turns[0]!.value[1])).toBe(1);
      } finally {
        prom?.kill("SIGKILL");
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
