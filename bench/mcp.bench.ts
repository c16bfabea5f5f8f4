// MCP client costs. (1) Per-call overhead: a tool call through Holon's catalog bridge and
// tool dispatch (envelope, result capping, external-evidence rendering; the server confined
// by the sandbox) against the same call made with the bare SDK client over plain stdio, to
// the same kind of fast stdio server (test/fixtures/mcp/fixture-server.mjs `ping`), in
// alternating pairs so the machine's noise hits both alike. The difference is what Holon
// adds beyond the server's own time. (2) Unused servers: `holon serve` with five MCP
// servers configured and none used against one with none, alternating, after start has
// settled: no server process may exist, and the resident memory should not grow.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import { round, summarize } from "./lib/stats.ts";
import { descendants, memoryKb, sleep, startHolon } from "./lib/proc.ts";

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const bench: Benchmark = {
  name: "mcp",
  description:
    "MCP: per-call overhead over a stdio server beyond the bare SDK client; 5 unused servers at start",
  async run(ctx) {
    const r = new ResultBuilder();
    const fixture = join(ctx.root, "test/fixtures/mcp/fixture-server.mjs");
    await perCall(ctx, r, fixture);
    await unused(ctx, r, fixture);
    return r.result;
  },
};
export default bench;

async function perCall(
  ctx: Parameters<Benchmark["run"]>[0],
  r: ResultBuilder,
  fixture: string,
): Promise<void> {
  const mod = (p: string) => import(pathToFileURL(join(ctx.root, p)).href);
  const { RuntimeHost } = await mod("src/host/host.ts");
  const { McpToolBridge } = await mod("src/tools/mcp/mcp-tool.ts");
  const { ToolRegistry, dispatch } = await mod("src/tools/registry.ts");
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");

  const home = mkdtempSync(join(tmpdir(), "holon-bench-mcp-"));
  writeFileSync(
    join(home, "config.json"),
    JSON.stringify({
      mcp: { servers: { f: { command: process.execPath, args: [fixture, "ok"] } } },
    }),
    { mode: 0o600 },
  );
  const host = RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
  const bare = new Client({ name: "bench", version: "1" });
  const transport = new StdioClientTransport({ command: process.execPath, args: [fixture, "ok"] });
  try {
    await bare.connect(transport);
    const agent = host.agents.get("main");
    const registry = new ToolRegistry();
    for (const t of await new McpToolBridge(host.services.mcp).toolsFor(agent))
      registry.register(t);
    const tctx = {
      agent,
      run_id: "run_bench",
      message: { id: "msg_bench", authority_class: "operator_instruction" },
      call_id: "call_bench",
      execution_root: agent.agent_home,
      cwd: agent.agent_home,
      signal: new AbortController().signal,
      budget: { default_tokens: 8_000, max_tokens: 64_000 },
      tasks: host.tasks,
      services: { tasks: host.tasks, mcp: host.services.mcp },
    };
    const viaHolon = async () => {
      const t0 = performance.now();
      const out = await dispatch(registry, "mcp__f__ping", "{}", tctx);
      const ms = performance.now() - t0;
      if (out.canonical.status !== "success") throw new Error(out.rendered);
      return ms;
    };
    const viaSdk = async () => {
      const t0 = performance.now();
      await bare.callTool({ name: "ping", arguments: {} });
      return performance.now() - t0;
    };
    const n = ctx.quick ? 200 : 2_000;
    const h: number[] = [];
    const b: number[] = [];
    const diff: number[] = [];
    for (let i = 0; i < n + 50; i++) {
      const [x, y] =
        i % 2 === 0
          ? [await viaHolon(), await viaSdk()]
          : ((s, t) => [t, s])(await viaSdk(), await viaHolon());
      if (i < 50) continue; // warm-up
      h.push(x);
      b.push(y);
      diff.push(x - y);
    }
    const sh = summarize(h);
    const sb = summarize(b);
    const sd = summarize(diff);
    r.metric("call_holon_p50_ms", round(sh.p50, 3), "ms", "call through Holon, p50");
    r.metric("call_holon_p99_ms", round(sh.p99, 3), "ms", "call through Holon, p99");
    r.metric("call_sdk_p50_ms", round(sb.p50, 3), "ms", "bare SDK client call, p50");
    r.metric("overhead_p50_ms", round(sd.p50, 3), "ms", "Holon's overhead per call, median");
    r.target("overhead per call ≤ 1 ms (median)", "overhead_p50_ms", "<=", 1);
    ctx.log(
      `per call: holon p50 ${sh.p50.toFixed(3)} ms, sdk p50 ${sb.p50.toFixed(3)} ms, overhead p50 ${sd.p50.toFixed(3)} ms`,
    );
  } finally {
    await bare.close().catch(() => {});
    await host.shutdown();
    rmSync(home, { recursive: true, force: true });
  }
}

async function unused(
  ctx: Parameters<Benchmark["run"]>[0],
  r: ResultBuilder,
  fixture: string,
): Promise<void> {
  const rounds = ctx.quick ? 2 : 5;
  const withServers: number[] = [];
  const without: number[] = [];
  let started = 0;
  for (let i = 0; i < rounds; i++) {
    for (const configured of i % 2 === 0 ? [true, false] : [false, true]) {
      const home = mkdtempSync(join(tmpdir(), "holon-bench-mcp-"));
      if (configured) {
        const servers: Record<string, unknown> = {};
        for (let k = 1; k <= 5; k++)
          servers[`s${k}`] = { command: process.execPath, args: [fixture, "ok"] };
        writeFileSync(join(home, "config.json"), JSON.stringify({ mcp: { servers } }), {
          mode: 0o600,
        });
      }
      const server = await startHolon(ctx.root, { home });
      try {
        await sleep(1_500); // start settles (recovery, first timers)
        const rss = memoryKb(server.pid).rss;
        const kids = descendants(server.pid).filter((p) => {
          try {
            return readFileSync(`/proc/${p}/cmdline`, "utf8").includes("fixture-server");
          } catch {
            return false;
          }
        });
        started += kids.length;
        (configured ? withServers : without).push(rss);
      } finally {
        await server.stop();
        rmSync(home, { recursive: true, force: true });
      }
    }
  }
  const a = median(withServers) / 1024;
  const b = median(without) / 1024;
  r.metric("rss_5_unused_mb", round(a, 1), "MB", "RSS with 5 unused MCP servers (median)");
  r.metric("rss_none_mb", round(b, 1), "MB", "RSS with no MCP servers (median)");
  r.metric("rss_delta_mb", round(a - b, 2), "MB", "RSS difference");
  r.metric("servers_started", started, "processes", "MCP server processes at start");
  r.target("5 unused servers start none", "servers_started", "<=", 0);
  r.target("5 unused servers add ≤ 1 MB RSS (noise)", "rss_delta_mb", "<=", 1);
  r.check("no MCP server started by an idle host", started === 0);
  ctx.log(
    `unused: with ${a.toFixed(1)} MB, without ${b.toFixed(1)} MB, servers started ${started}`,
  );
}
