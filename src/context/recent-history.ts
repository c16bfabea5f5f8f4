// Recent history: the newest exchanges (each incoming message, the tools its turn ran and
// the brief that answered it), newest kept first, within a token budget: the oldest lines are dropped when the
// budget is spent. Working memory and episodes (memory.ts) carry what is older; this is
// only the short tail, never a replay of the transcript.
import { bodyText, type MessageEnvelope } from "../domain/message.ts";
import { estimateTokens } from "../memory/tokens.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { BriefRecord } from "../domain/brief.ts";
import type { PromptContributor } from "./section.ts";

/** Most messages looked at, whatever the budget (keeps assembly time flat). */
const HISTORY_MESSAGES = 24;
const MESSAGE_CHARS = 1_500;
const BRIEF_CHARS = 1_200;

/** The history's share of the prompt budget, and its bounds in tokens. */
export function historyBudget(promptBudget: number): number {
  return Math.max(400, Math.min(6_000, Math.floor(promptBudget * 0.08)));
}

/** Rendered blocks kept per contributor (host): a few dozen agents' recent exchanges. */
const BLOCKS_KEPT = 2_048;

export function recentHistoryContributor(
  budgetOf: (agent: AgentRecord) => number = () => historyBudget(100_000),
): PromptContributor {
  // A message's block (its line, its tools, its answering brief) and that block's token
  // cost, by what it is made of: messages, briefs and a turn's tool evidence never change,
  // and the same ones are shown turn after turn, so each is rendered and counted once.
  const rendered = new Map<string, { text: string; cost: number }>();
  // A message's own line, by id. Envelopes never change: the line of the message a turn
  // runs is made then, since the next turns show it, so rendering its block later reads
  // nothing (a message no turn ran is read by id once).
  const messageLines = new Map<string, string>();
  const lineOf = (m: MessageEnvelope) => {
    let line = messageLines.get(m.id);
    if (line === undefined) {
      line = `- ${m.kind} from ${m.origin.kind} at ${m.created_at}: ${clip(bodyText(m.body), MESSAGE_CHARS)}`;
      messageLines.set(m.id, line);
      if (messageLines.size > BLOCKS_KEPT) messageLines.delete(messageLines.keys().next().value!);
    }
    return line;
  };
  return {
    id: "recent_history",
    contribute: async ({ store, agent, message }) => {
      lineOf(message);
      // Ids and statuses only: a block already rendered needs nothing else.
      const messages = (
        await store.messages.recentStatus(agent.agent_id, HISTORY_MESSAGES + 1)
      ).filter((m) => m.id !== message.id && m.status !== "queued");
      if (messages.length === 0) return [];
      const briefs = await store.briefs.recent(agent.agent_id, HISTORY_MESSAGES * 2);
      // Tool evidence per message, kept by the runtime at each turn boundary (working memory).
      const evidence = new Map(
        ((await store.memory.workingMemory(agent.agent_id))?.turn_tools ?? []).map((t) => [
          t.message_id,
          t.tools,
        ]),
      );
      const budget = budgetOf(agent);
      const header = "Recent history (oldest first; older work is in working memory and episodes):";
      let used = estimateTokens(header);
      const blocks: string[] = [];
      // The newest brief answering each message.
      const answers = new Map<string, BriefRecord>();
      for (const b of briefs) if (b.related_message_id) answers.set(b.related_message_id, b);
      // Newest first until the budget is spent, then shown oldest first.
      for (const head of messages) {
        const tools = evidence.get(head.id);
        const answer = answers.get(head.id);
        const key = `${head.id}\n${answer?.id ?? ""}\n${tools ?? ""}`;
        let block = rendered.get(key);
        if (block === undefined) {
          let line = messageLines.get(head.id);
          if (line === undefined) {
            const m = await store.messages.get(head.id);
            if (m === undefined) continue; // cannot happen: the same synchronous read
            line = lineOf(m);
          }
          const lines = [line];
          if (tools) lines.push(`  tools: ${tools}`);
          if (answer) lines.push(`  your ${answer.kind} brief: ${clip(answer.text, BRIEF_CHARS)}`);
          const text = lines.join("\n");
          block = { text, cost: estimateTokens(text) + 1 };
          rendered.set(key, block);
          if (rendered.size > BLOCKS_KEPT) rendered.delete(rendered.keys().next().value!);
        }
        if (used + block.cost > budget) break;
        used += block.cost;
        blocks.push(block.text);
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
