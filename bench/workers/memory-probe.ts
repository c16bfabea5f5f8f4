// Run by bench/memory.bench.ts in its own process: builds a home, seeds one agent with
// history and measures prompt assembly (the turn's contributors through promptPreview) and
// the memory index rebuild. Prints one JSON object on stdout.
//
// argv: <home> <transcript entries> <episodes> <briefs> <assembly iterations> <rebuild: 0|1>
import { RuntimeHost } from "../../src/host/host.ts";
import { promptPreview } from "../../src/host/prompt-preview.ts";
import type { EpisodeRecord } from "../../src/domain/memory.ts";

const [home, entriesArg, episodesArg, briefsArg, itersArg, rebuildArg] = process.argv.slice(2);
const entries = Number(entriesArg);
const episodes = Number(episodesArg);
const briefs = Number(briefsArg);
const iters = Number(itersArg);

const host = await RuntimeHost.open({ home: home!, env: { ...process.env, HOLON_HOME: home! } });
const store = host.store;
const agentId = host.defaultAgentId;
const now = () => store.clock.now().toISOString();

// Seed: runs of 10 transcript entries (message, rounds, tool results, terminal), one brief
// per run up to `briefs`, and `episodes` finalized episodes.
await store.tx(async () => {
  for (let i = 0; i < entries; i++) {
    const run = `run_seed_${Math.floor(i / 10)}`;
    const kind = i % 10 === 0 ? "incoming_message" : i % 2 ? "assistant_round" : "tool_execution";
    const data =
      kind === "incoming_message"
        ? { text: `request ${i}: deploy the service and check the logs`, kind: "operator_prompt" }
        : kind === "assistant_round"
          ? { round: i % 10, text: `working on step ${i}`, tool_calls: [], stop_reason: "tool_use" }
          : {
              call_id: `c${i}`,
              tool_name: "ExecCommand",
              arguments: `{"cmd":"make test ${i}"}`,
              envelope: { status: "success", summary_text: "command exited with status 0" },
              rendered: "ok\n".repeat(200),
            };
    await store.transcript.append({
      id: `tr_seed_${i}`,
      agent_id: agentId,
      created_at: now(),
      kind,
      run_id: run,
      message_id: `msg_seed_${Math.floor(i / 10)}`,
      data,
    } as never);
  }
  // One processed operator message per run, the newest ones answered by a brief.
  const runs = Math.ceil(entries / 10);
  for (let i = 0; i < runs; i++) {
    await store.messages.insert({
      id: `msg_seed_${i}`,
      agent_id: agentId,
      created_at: now(),
      kind: "operator_prompt",
      origin: { kind: "operator" },
      trust: "trusted_operator",
      authority_class: "operator_instruction",
      priority: "normal",
      trigger_kind: "operator_input",
      body: { type: "text", text: `request ${i}: deploy the service and check the logs` },
    });
    await store.messages.setStatus(`msg_seed_${i}`, "processed", now());
    await store.briefs.insert({
      id: `brief_answer_${i}`,
      agent_id: agentId,
      kind: "result",
      created_at: now(),
      text: `Deployed run ${i}; logs are clean.`,
      related_message_id: `msg_seed_${i}`,
    });
  }
  await store.memory.putWorkingMemory({
    agent_id: agentId,
    revision: runs,
    updated_at: now(),
    current: {
      current_work_item: null,
      open_work_items: 0,
      last_request: "deploy the service and check the logs",
      last_result: "Deployed; logs are clean.",
      files_touched: ["src/a.ts", "src/b.ts"],
      commands: ["make test"],
      recent_errors: [],
      waiting: null,
    },
    pending_delta: [],
    last_prompted_revision: runs,
    active_episode: null,
    archived_episode_count: episodes,
    compactions_total: 0,
    turn_tools: Array.from({ length: Math.min(runs, 24) }, (_, k) => ({
      message_id: `msg_seed_${runs - 1 - k}`,
      tools: "ExecCommand 5×",
    })),
    compacted_rounds_total: 0,
  });
  for (let i = 0; i < briefs; i++) {
    await store.briefs.insert({
      id: `brief_seed_${i}`,
      agent_id: agentId,
      kind: "result",
      created_at: now(),
      text: `Result ${i}: deployed build ${i} to staging; 部署完成 ${i}; the deploy key was rotated.`,
    });
  }
  for (let i = 0; i < episodes; i++) {
    const e: EpisodeRecord = {
      id: `ep_seed_${i}`,
      agent_id: agentId,
      created_at: now(),
      started_at: now(),
      turn_range: [i * 3 + 1, i * 3 + 3],
      message_count_range: [i * 3 + 1, i * 3 + 3],
      work_item_id: null,
      workspace_id: null,
      files: [`src/module_${i}.ts`],
      commands: [`make test ${i}`],
      verification: [],
      decisions: [`shipped change ${i}`],
      carry_forward: [],
      waiting: null,
      boundary: "result_checkpoint",
      summary: `Turns ${i * 3 + 1}–${i * 3 + 3}: fixed issue ${i} in src/module_${i}.ts and verified with make test.`,
    };
    await store.memory.addEpisode(e);
  }
});

const agent = await host.agents.get(agentId);
const times: number[] = [];
let tokens = 0;
let chars = 0;
for (let i = 0; i < iters; i++) {
  const t0 = performance.now();
  const p = await promptPreview(host, agent);
  times.push(performance.now() - t0);
  tokens = p.totals.estimated_tokens;
  chars = p.sections.reduce((n, s) => n + s.chars, 0) + p.incoming.text.length;
}
let rebuildMs: number | null = null;
let indexed = 0;
if (rebuildArg === "1") {
  const t0 = performance.now();
  indexed = await host.services.memoryIndex.rebuild(agent);
  rebuildMs = performance.now() - t0;
}
await host.shutdown();
process.stdout.write(JSON.stringify({ times, tokens, chars, rebuild_ms: rebuildMs, indexed }));
