// The operator inspects any agent `agent list --all` shows: a finished `holon run` agent and
// a private child answer `status`, `tail`, `transcript` and `agent get` through the
// authenticated /control reads; a finished run's agent is stopped (reason run_finished),
// stays inspectable, and `run --resume` continues it; the public reads keep them hidden.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { reply, type FakeAnswer, type RecordedRequest } from "./fake-provider/server.ts";
import { HOLON_BIN, REPO_ROOT, runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
let home: string;
let workspace: string;
let serve: { proc: ChildProcess; url: string; auth: Record<string, string> };
const env = () => ({ HOLON_HOME: home });

/** Which agent sent a request: its prompt cache key is `holon-<agent_id>-<digest>`. */
function agentOf(req: RecordedRequest): string {
  const key = String(req.body.prompt_cache_key ?? "");
  return key.slice("holon-".length, key.lastIndexOf("-"));
}

beforeAll(async () => {
  home = tempHome();
  workspace = tempHome("holon-ws-");
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  serve = await spawnServe(home);
});
afterAll(async () => {
  serve.proc.kill("SIGTERM");
  await new Promise((r) => serve.proc.once("exit", r));
});

async function cli(args: string[]) {
  return runCli(args, { env: env(), cwd: workspace, timeoutMs: 60_000 });
}

describe("inspecting private and temporary agents", () => {
  it("a finished run's agent is stopped (run_finished), inspectable by id, and resumable", async () => {
    fake.enqueue(reply.text("first answer"));
    const run = await cli(["run", "--json", "say something"]);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout);
    const id = result.agent_id as string;
    expect(id).toMatch(/^run-/);
    expect(result.kept).toBe(false);

    const list = await cli(["agent", "list", "--all", "--json"]);
    const listed = (JSON.parse(list.stdout) as any[]).find((a) => a.agent_id === id);
    expect(listed).toMatchObject({ status: "stopped", visibility: "private" });

    const status = await cli(["status", id]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/status:\s+stopped/);
    expect(status.stdout).toContain(`holon run --resume ${id}`);

    const tail = await cli(["tail", id, "--json", "-n", "100"]);
    expect(tail.code, tail.stderr).toBe(0);
    const finished = (JSON.parse(tail.stdout) as any[]).find(
      (e) => e.type === "agent_state_changed" && e.payload.to === "stopped",
    );
    expect(finished?.payload.reason).toBe("run_finished");

    const transcript = await cli(["transcript", id]);
    expect(transcript.code, transcript.stderr).toBe(0);
    expect(transcript.stdout).toContain("first answer");

    const get = await cli(["agent", "get", id]);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(/status:\s+stopped/);

    // Private agents stay hidden on the public reads, and the twins need the token.
    const pub = await fetch(`${serve.url}/agents/${id}/status`, { headers: serve.auth });
    expect(pub.status).toBe(404);
    const anon = await fetch(`${serve.url}/control/agents/${id}/status`);
    expect(anon.status).toBe(401);
    const twin = await fetch(`${serve.url}/control/agents/${id}/events?limit=5`, {
      headers: serve.auth,
    });
    expect(twin.status).toBe(200);

    // Operator input is refused, but the refusal says what the agent is and what to do.
    const start = await cli(["agent", "start", id]);
    expect(start.code).toBe(1);
    expect(start.stderr).toContain("the temporary agent of a holon run");
    expect(start.stderr).toContain(`holon run --resume ${id}`);
    expect(start.stderr).not.toContain("create it first");

    fake.enqueue(reply.text("second answer"));
    const resumed = await cli(["run", "--json", "--resume", id, "and again"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ agent_id: id, final_text: "second answer" });
    const after = JSON.parse((await cli(["status", id, "--json"])).stdout);
    expect(after.status).toBe("stopped");
  }, 120_000);

  it("a private child answers status, tail -f, transcript and agent get", async () => {
    fake.setFallback((req): FakeAnswer => {
      const input = req.body.input as any[];
      const last = JSON.stringify(input[input.length - 1]);
      if (agentOf(req) === "main") {
        if (last.includes("SPAWN ONE"))
          return reply.tools([
            { name: "SpawnAgent", arguments: { initial_message: "CHILD JOB" }, call_id: "s1" },
          ]);
        return reply.text("Noted.");
      }
      return reply.text("child finished the job");
    });
    try {
      const p = await cli(["prompt", "SPAWN ONE"]);
      expect(p.code, p.stderr).toBe(0);
      const child = await waitFor(
        async () => {
          const all = JSON.parse((await cli(["agent", "list", "--all", "--json"])).stdout) as any[];
          return all.find((a) => a.lineage_parent_agent_id === "main")?.agent_id as string;
        },
        { what: "the child agent", timeoutMs: 30_000 },
      );
      await waitFor(
        async () => (await cli(["transcript", child])).stdout.includes("child finished the job"),
        { what: "the child's transcript", timeoutMs: 30_000 },
      );
      const status = await cli(["status", child, "--json"]);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ agent_id: child, visibility: "private" });
      const input = await cli(["prompt", "--agent", child, "hello"]);
      expect(input.code).toBe(1);
      expect(input.stderr).toContain("a child of main");
      expect(input.stderr).not.toContain("create it first");
      const get = await cli(["agent", "get", child, "--json"]);
      expect(get.code, get.stderr).toBe(0);
      expect(JSON.parse(get.stdout).identity.lineage_parent_agent_id).toBe("main");

      // tail -f follows the child through the operator's stream: it prints the newest
      // events, stays attached, and stops cleanly on Ctrl-C.
      const follow = spawn(
        process.execPath,
        [HOLON_BIN, "tail", "-f", "--display", "trace", "-n", "3", child],
        {
          cwd: REPO_ROOT,
          env: { ...process.env, ...env() },
        },
      );
      let out = "";
      let err = "";
      follow.stdout.on("data", (d) => (out += d));
      follow.stderr.on("data", (d) => (err += d));
      await waitFor(() => out.trim().split("\n").length >= 3, { what: "tail -f output" });
      expect(follow.exitCode).toBeNull();
      follow.kill("SIGINT");
      const code = await new Promise((r) => follow.once("exit", r));
      expect(err).toBe("");
      expect(code).toBe(0);

      const pub = await fetch(`${serve.url}/agents/${encodeURIComponent(child)}/transcript`, {
        headers: serve.auth,
      });
      expect(pub.status).toBe(404);
    } finally {
      fake.setFallback(null);
    }
  }, 120_000);
});
