// Recent history: the newest exchanges (each incoming message, the tools its turn ran and
// the brief that answered it), newest kept first, within a token budget: the oldest lines are dropped when the
// budget is spent. Working memory and episodes (memory.ts) carry what is older; this is
// only the short tail, never a replay of the transcript.
import { bodyText } from "../domain/message.ts";
import { estimateTokens } from "../memory/tokens.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { PromptContributor } from "./section.ts";

/** Most messages looked at, whatever the budget (keeps assembly time flat). */
const HISTORY_MESSAGES = 24;
const MESSAGE_CHARS = 1_500;
const BRIEF_CHARS = 1_200;

/** The history's share of the prompt budget, and its bounds in tokens. */
export function historyBudget(promptBudget: number): number {
  return Math.max(400, Math.min(6_000, Math.floor(promptBudget * 0.08)));
}

export function recentHistoryContributor(
  budgetOf: (agent: AgentRecord) => number = () => historyBudget(100_000),
): PromptContributor {
  return {
    id: "recent_history",
    contribute: ({ store, agent, message }) => {
      const messages = store.messages
        .recent(agent.agent_id, HISTORY_MESSAGES + 1)
        .filter((m) => m.id !== message.id && m.status !== "queued");
      if (messages.length === 0) return [];
      const briefs = store.briefs.recent(agent.agent_id, HISTORY_MESSAGES * 2);
      // Tool evidence per message, kept by the runtime at each turn boundary (working memory).
      const evidence = new Map(
        (store.memory.workingMemory(agent.agent_id)?.turn_tools ?? []).map((t) => [
          t.message_id,
          t.tools,
        ]),
      );
      const budget = budgetOf(agent);
      const header = "Recent history (oldest first; older work is in working memory and episodes):";
      let used = estimateTokens(header);
      const blocks: string[] = [];
      // Newest first until the budget is spent, then shown oldest first.
      for (const m of messages) {
        const lines = [
          `- ${m.kind} from ${m.origin.kind} at ${m.created_at}: ${clip(bodyText(m.body), MESSAGE_CHARS)}`,
        ];
        const tools = evidence.get(m.id);
        if (tools) lines.push(`  tools: ${tools}`);
        const answer = briefs.filter((b) => b.related_message_id === m.id).at(-1);
        if (answer) lines.push(`  your ${answer.kind} brief: ${clip(answer.text, BRIEF_CHARS)}`);
        const text = lines.join("\n");
        const cost = estimateTokens(text) + 1;
        if (used + cost > budget) break;
        used += cost;
        blocks.push(text);
      }
      if (blocks.length === 0) return [];
      const omitted = messages.length - blocks.length;
      const lines = [header];
      if (omitted > 0) lines.push(`(${omitted} older messages left out for the context budget)`);
      lines.push(...blocks.reverse());
      return [{ placement: "context", stability: "turn_scoped", text: lines.join("\n") }];
    },
  };
}

function clip(text: string, n: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > n ? flat.slice(0, n) + "…" : flat;
}
