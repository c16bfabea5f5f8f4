// MCP under `holon run`, whose in-process host loads the MCP client only when its home uses
// MCP (src/host/mcp-facade.ts): a server in config.json still gives the model its tools and
// answers their calls, and a server a killed host left running is still killed when the next
// run starts. (A run with nothing configured loads none of it: test/perf-budget-startup.test.ts.)
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bootId, readProcStat } from "../src/tasks/process-proc.ts";
import { reply } from "./fake-provider/server.ts";
import { runCli, tempHome } from "./helpers/home.ts";
import { fixture, writeMcpConfig } from "./helpers/mcp.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

describe("MCP in a one-shot run", () => {
  it("a server in config.json gives the run its tools, and the model's call reaches it", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    writeMcpConfig(home, { servers: { f: fixture("ok") } });
    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__f__ping", arguments: {} }]),
      reply.text("it said pong"),
    );
    const r = await runCli(["run", "--home", home, "ping the server"], {
      env: { HOLON_HOME: home },
      timeoutMs: 45_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("it said pong");
    const [first, second] = fake.requests.slice(before);
    const tools = (first!.body.tools as { name?: string }[]).map((t) => t.name);
    expect(tools).toContain("mcp__f__ping");
    expect(JSON.stringify(second!.body.input)).toContain("pong from ping");
  }, 60_000);

  it("a server a killed host left running is killed when the next run starts", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // A process in its own group, recorded the way the MCP client records a server it started
    // (src/mcp/records.ts), with no MCP server configured: only the record says it exists.
    const leftover = spawn(process.execPath, ["-e", "setInterval(() => {}, 60_000)"], {
      detached: true,
      stdio: "ignore",
    });
    const exited = new Promise((r) => leftover.once("exit", r));
    const pid = leftover.pid!;
    const ticks = readProcStat(pid)!.start_ticks;
    const records = join(home, "run", "mcp");
    mkdirSync(records, { recursive: true, mode: 0o700 });
    writeFileSync(
      join(records, "leftover.json"),
      JSON.stringify({
        key: "leftover",
        agent_id: "main",
        server: "gone",
        pid,
        pgid: pid,
        start_ticks: ticks,
        boot_id: bootId(),
        started_at: new Date().toISOString(),
      }),
      { mode: 0o600 },
    );
    try {
      fake.enqueue(reply.text("hello back"));
      const r = await runCli(["run", "--home", home, "hello"], { env: { HOLON_HOME: home } });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("hello back");
      await exited; // killed by the run's start, not by this test
    } finally {
      if (leftover.exitCode === null && leftover.signalCode === null) leftover.kill("SIGKILL");
    }
  }, 60_000);
});
