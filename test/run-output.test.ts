// `holon run` output formats and its temporary agent: stream-json is one catalog event per
// line then the RunOnceResponse; the agent id is printed; --keep and --resume continue it;
// a command promoted to a task is listed as still running and its agent kept.
import { describe, expect, it } from "vitest";
import { catalogEventSchema } from "../src/domain/events.ts";
import { reply } from "./fake-provider/server.ts";
import { runCli, tempHome } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

describe("holon run output", () => {
  it("stream-json: every line but the last is a catalog event, the last the RunOnceResponse", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(reply.text("all done", { input_tokens: 12, output_tokens: 3 }));
    const r = await runCli(["run", "--output-format", "stream-json", "say done"], {
      env: { HOLON_HOME: home },
      cwd: tempHome("holon-ws-"),
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split("\n");
    const result = JSON.parse(lines.pop()!);
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) {
      const parsed = catalogEventSchema().safeParse(JSON.parse(line));
      expect(parsed.success, line).toBe(true);
    }
    const types = lines.map((l) => JSON.parse(l).type);
    expect(types).toContain("message_admitted");
    expect(types).toContain("brief_created");
    expect(types).toContain("message_processed");
    expect(result).toMatchObject({
      ok: true,
      final_text: "all done",
      temporary_agent: true,
      kept: false,
      tasks_still_running: [],
    });
    expect(result.agent_id).toMatch(/^run-/);
  }, 90_000);

  it("text output names the run agent; --keep then --resume continues it", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(reply.text("first answer"), reply.text("second answer"));
    const first = await runCli(["run", "--keep", "remember 42"], {
      env: { HOLON_HOME: home },
      cwd: tempHome("holon-ws-"),
      timeoutMs: 60_000,
    });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe("first answer\n");
    const id = /run agent (run-\S+) \(kept\)/.exec(first.stderr)?.[1];
    expect(id, first.stderr).toBeDefined();
    const before = fake.requests.length;
    const second = await runCli(["run", "--json", "--resume", id!, "what was it?"], {
      env: { HOLON_HOME: home },
      cwd: tempHome("holon-ws-"),
      timeoutMs: 60_000,
    });
    expect(second.code, second.stderr).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ agent_id: id, final_text: "second answer" });
    // The resumed agent's model call carries the earlier exchange.
    expect(JSON.stringify(fake.requests[before]!.body)).toContain("remember 42");

    const unknown = await runCli(["run", "--resume", "run-nope", "x"], {
      env: { HOLON_HOME: home },
    });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("unknown_agent");
  }, 120_000);

  it("a command promoted to a task is listed as still running, and its agent kept", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "sleep 5", yield_time_ms: 50 } }]),
      reply.text("started it"),
    );
    const r = await runCli(["run", "--json", "start a slow job"], {
      env: { HOLON_HOME: home },
      cwd: tempHome("holon-ws-"),
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result.kept).toBe(true);
    expect(result.tasks_still_running).toHaveLength(1);
    expect(result.tasks_still_running[0].status).toMatch(/running|queued/);
  }, 90_000);
});
