// The last few exchanges (each incoming message and the brief that answered it), bounded,
// so a new turn knows what it was just asked. Working memory will replace most of this.
import { bodyText } from "../domain/message.ts";
import type { PromptContributor } from "./section.ts";

const HISTORY_MESSAGES = 8;
const HISTORY_CHARS = 1_500;

export const recentHistoryContributor: PromptContributor = {
  id: "recent_history",
  contribute: ({ store, agent, message }) => {
    const messages = store.messages
      .recent(agent.agent_id, HISTORY_MESSAGES + 1)
      .filter((m) => m.id !== message.id && m.status !== "queued")
      .reverse();
    if (messages.length === 0) return [];
    const briefs = store.briefs.recent(agent.agent_id, 50);
    const lines: string[] = ["Recent history (oldest first):"];
    for (const m of messages) {
      lines.push(`- ${m.kind} from ${m.origin.kind} at ${m.created_at}: ${clip(bodyText(m.body))}`);
      const answer = briefs.filter((b) => b.related_message_id === m.id).at(-1);
      if (answer) lines.push(`  your ${answer.kind} brief: ${clip(answer.text)}`);
    }
    return [{ placement: "context", stability: "turn_scoped", text: lines.join("\n") }];
  },
};

function clip(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > HISTORY_CHARS ? flat.slice(0, HISTORY_CHARS) + "…" : flat;
}
