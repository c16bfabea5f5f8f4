// Cross-turn continuity: an agent works across three turns with a host restart between the
// second and the third. The third turn's prompt carries the runtime-derived working memory
// and the episode summary, not the raw tool output of the first turn; the episode is in the
// database and in its JSONL mirror; the cacheable prefix is byte-identical across turns.
import { describe, expect, it } from "vitest";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";

const fake = useFakeProvider();

async function processed(rt: TestRuntime, agentId: string): Promise<number> {
  return (await rt.host.store.events.after(agentId, 0, 10_000)).filter(
    (e) => e.type === "message_processed",
  ).length;
}

async function prompt(rt: TestRuntime, agent: string, text: string, n: number) {
  const r = await rt.req("POST", `/control/agents/${agent}/prompt`, { text });
  expect(r.status).toBeLessThan(300);
  await waitFor(
    async () =>
      (await processed(rt, agent)) >= n && !(await rt.host.store.agents.get(agent))!.current_run_id,
    { what: `message ${n} processed`, timeoutMs: 15_000 },
  );
}

const inputText = (body: any) => JSON.stringify(body.input ?? body.messages);

describe("working memory and episodes across a restart", () => {
  it("the third turn sees working memory and the episode, not the old transcript", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    let rt = await startRuntime({ home });
    const agent = rt.host.defaultAgentId;
    const before = fake.requests.length;

    // Monday, turn 1: a command whose output carries a marker, then a patch and an answer.
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "printf 'RAW%sOUTPUT' -MARKER-" } }]),
      reply.tools([
        {
          name: "ApplyPatch",
          arguments: {
            patch: "--- /dev/null\n+++ b/deploy.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo deploying\n",
          },
        },
      ]),
      reply.text("Wrote deploy.sh; the deploy key lives in vault path ops/deploy-key."),
    );
    await prompt(
      rt,
      agent,
      "Set up the deploy script. The deploy key is in vault ops/deploy-key.",
      1,
    );
    const wm1 = (await rt.host.services.continuity.workingMemory(agent))!;
    expect(wm1.revision).toBe(1);
    expect(wm1.current.files_touched).toContain("deploy.sh");

    // Turn 2: the agent rests (a waiting boundary finalizes the episode).
    fake.enqueue(reply.tools([{ name: "Sleep", arguments: {} }], { text: "Resting." }));
    await prompt(rt, agent, "Thanks, that is all for today.", 2);
    expect(await rt.host.store.memory.episodeCount(agent)).toBe(1);
    const agentHome = (await rt.host.store.agents.get(agent))!.agent_home;
    const mirror = join(agentHome, ".holon", "ledger", "context_episodes.jsonl");
    const lines = readFileSync(mirror, "utf8").trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(statSync(mirror).mode & 0o777).toBe(0o600);
    const episode = JSON.parse(lines[0]!);
    expect(episode.boundary).toBe("waiting");
    expect(episode.files).toContain("deploy.sh");
    expect(episode.summary).toContain("deploy key");
    await rt.close();

    // The mirror disagrees with the database (someone truncated it): rebuilt on the next append.
    writeFileSync(mirror, "");

    // Tuesday, after a restart: turn 3.
    rt = await startRuntime({ home });
    fake.enqueue(reply.tools([{ name: "Sleep", arguments: {} }], { text: "Back to it." }));
    await prompt(rt, agent, "Good morning. Where were we?", 3);
    const sent = fake.requests.slice(before);
    const t1 = sent[0]!;
    const t3 = sent.at(-1)!;
    const third = inputText(t3.body);
    expect(third).toContain("Working memory (revision");
    expect(third).toContain("files touched: deploy.sh");
    expect(third).toContain(`${episode.id} (waiting)`);
    expect(third).toContain("vault path ops/deploy-key");
    // the history tail carries the tool evidence of Monday's turn, not its output
    expect(third).toContain("tools: ExecCommand 1×, ApplyPatch 1×");
    // the raw output of Monday's command is not replayed
    expect(JSON.stringify(sent[1]!.body)).toContain("RAW-MARKER-OUTPUT");
    expect(JSON.stringify(t3.body)).not.toContain("RAW-MARKER-OUTPUT");
    // the cacheable prefix is byte-identical across turns, and so is the cache key
    expect(t3.body.instructions).toBe(t1.body.instructions);
    expect(JSON.stringify(t3.body.tools)).toBe(JSON.stringify(t1.body.tools));
    expect(t3.body.prompt_cache_key).toBe(t1.body.prompt_cache_key);
    // measured as a provider cache would: every request after the first hits the cached prefix
    expect(sent[0]!.cache_hit).toBe(false);
    expect(sent.slice(1).every((r) => r.cache_hit)).toBe(true);

    // the second episode was appended and the mirror rebuilt from the database
    expect(existsSync(mirror)).toBe(true);
    const rebuilt = readFileSync(mirror, "utf8").trim().split("\n");
    expect(rebuilt.map((l) => JSON.parse(l).id)).toEqual(
      (await rt.host.store.memory.recentEpisodes(agent, 10)).map((e) => e.id),
    );
    expect(rebuilt).toHaveLength(2);

    // /state reports the memory fields
    const state = await rt.req("GET", `/agents/${agent}/state`);
    expect(state.status).toBe(200);
    expect(state.json.memory).toMatchObject({
      working_memory_revision: expect.any(Number),
      archived_episode_count: 2,
      compactions_total: 0,
      compacted_rounds_total: 0,
    });
    expect(state.json.memory.working_memory_revision).toBeGreaterThanOrEqual(2);

    // the prompt preview: sections with estimates, the cache-stable prefix marked
    const preview = await rt.req("GET", `/control/agents/${agent}/debug/prompt`);
    expect(preview.status).toBe(200);
    const sections = preview.json.sections as any[];
    const wm = sections.find((x) => x.contributor === "working_memory");
    expect(wm).toMatchObject({ placement: "context", cache_stable: false });
    expect(wm.text).toContain("Working memory (revision");
    expect(wm.estimated_tokens).toBeGreaterThan(10);
    expect(sections.find((x) => x.contributor === "policy")?.cache_stable).toBe(true);
    expect(preview.json.prompt_cache_key).toBe(t1.body.prompt_cache_key);
    expect(preview.json.totals.estimated_tokens).toBeGreaterThan(
      preview.json.totals.cache_stable_prefix_tokens,
    );
    // the trigger capability is never shown in full
    expect(JSON.stringify(preview.json)).not.toMatch(/callbacks\/wake\/[A-Za-z0-9_-]{20,}/);
    const anonymous = await rt.req("GET", `/control/agents/${agent}/debug/prompt`, undefined, {
      authorization: "",
    });
    expect(anonymous.status).toBe(401);
    const unknown = await rt.req("GET", `/control/agents/nobody/debug/prompt`);
    expect(unknown.status).toBe(404);

    // and through the CLI
    const cli = await runCli(["debug", "prompt", agent, "--home", home]);
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toMatch(/\[c\]\s+system_prompt/);
    expect(cli.stdout).toContain("working_memory");
    expect(cli.stdout).toMatch(/total ~\d+ tokens of \d+/);
    await rt.close();
  });
});
