// Working memory and episodes in the prompt: the runtime-derived working memory (with the
// change since the agent last saw it), the newest finalized episodes and the open one,
// within a token budget. Turn-scoped context: it changes as the agent works, so it rides
// after the cacheable prefix.
import type { AgentRecord } from "../domain/agent.ts";
import type { EpisodeRecord, WorkingMemoryRecord } from "../domain/memory.ts";
import { estimateTokens } from "../memory/tokens.ts";
import type { PromptContributor } from "./section.ts";

/** Episodes read per turn at most (the projection never grows with history). */
const EPISODES_READ = 8;

export function memoryBudget(promptBudget: number): number {
  return Math.max(400, Math.min(6_000, Math.floor(promptBudget * 0.1)));
}

export function workingMemoryContributor(
  budgetOf: (agent: AgentRecord) => number = () => memoryBudget(100_000),
): PromptContributor {
  return {
    id: "working_memory",
    contribute: async ({ store, agent }) => {
      const wm = await store.memory.workingMemory(agent.agent_id);
      if (!wm) return [];
      const budget = budgetOf(agent);
      const head = workingMemoryLines(wm);
      let used = estimateTokens(head.join("\n"));
      const episodes = await store.memory.recentEpisodes(agent.agent_id, EPISODES_READ);
      const shown: string[] = [];
      for (const e of [...episodes].reverse()) {
        const line = episodeLine(e);
        const cost = estimateTokens(line) + 1;
        if (used + cost > budget) break;
        used += cost;
        shown.unshift(line);
      }
      const lines = [...head];
      if (shown.length) {
        const older = wm.archived_episode_count - shown.length;
        lines.push(
          "",
          `Recent episodes (oldest first${older > 0 ? `; ${older} older ones: MemorySearch` : ""}):`,
          ...shown,
        );
      }
      const b = wm.active_episode;
      if (b && b.turns > 0) {
        const open = `Open episode ${b.id}: turns ${b.first_turn}–${b.last_turn}${b.work_item_id ? ` on ${b.work_item_id}` : ""}; last asked: ${b.requests.at(-1) ?? ""}`;
        if (used + estimateTokens(open) <= budget) lines.push("", open);
      }
      return [{ placement: "context", stability: "turn_scoped", text: lines.join("\n") }];
    },
  };
}

function workingMemoryLines(wm: WorkingMemoryRecord): string[] {
  const c = wm.current;
  const lines = [
    `Working memory (revision ${wm.revision}; kept by the runtime from your work items, briefs and tool evidence):`,
  ];
  if (c.current_work_item) {
    const w = c.current_work_item;
    lines.push(
      `- current work item: ${w.id}: ${w.objective} [plan ${w.plan_status}, todos ${w.todos}${w.next_todo ? `, next: ${w.next_todo}` : ""}]`,
    );
    if (w.blocked_by) lines.push(`- blocked by: ${w.blocked_by}`);
  }
  if (c.open_work_items) lines.push(`- open work items: ${c.open_work_items}`);
  if (c.last_request) lines.push(`- last request: ${c.last_request}`);
  if (c.last_result) lines.push(`- last result: ${c.last_result}`);
  if (c.files_touched.length) lines.push(`- files touched: ${c.files_touched.join(", ")}`);
  if (c.commands.length)
    lines.push(`- recent commands: ${c.commands.map((x) => `\`${x}\``).join(", ")}`);
  if (c.recent_errors.length) lines.push(`- recent errors: ${c.recent_errors.join(" | ")}`);
  if (c.waiting) lines.push(`- waiting: ${c.waiting}`);
  if (wm.pending_delta.length && wm.revision > wm.last_prompted_revision) {
    lines.push(`Changed since you last saw it:`, ...wm.pending_delta.map((d) => `- ${d}`));
  }
  return lines;
}

function episodeLine(e: EpisodeRecord): string {
  return `- ${e.id} (${e.boundary}): ${e.summary}`;
}
