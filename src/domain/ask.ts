// Asks: durable requests to a person (the operator, or for a child's input ask its parent
// agent). One record family for every way anything waits on a human: a budget stop, a
// question the agent cannot answer itself, a runaway loop the runtime halted, and later an
// approval. An ask is `pending` until it is decided, expires, or is withdrawn; those three
// are final. What it holds up is its scope: an agent-scope ask gates the whole agent (no
// model turn runs), a work-item ask blocks only that item.
import { z } from "zod";

export const AskKind = z.enum(["budget", "input", "approval"]);
export type AskKind = z.infer<typeof AskKind>;

export const AskState = z.enum(["pending", "decided", "expired", "withdrawn"]);
export type AskState = z.infer<typeof AskState>;

export const AskScope = z.enum(["agent", "work_item"]);
export type AskScope = z.infer<typeof AskScope>;

/** What opened the ask (who to thank for it, and which effects its decision has). */
export const AskSource = z.enum([
  /** The agent marked a work item `needs_input` and ended its turn with a question. */
  "needs_input",
  /** The work plane's runaway guard: too many self-continuations without progress. */
  "runaway_guard",
  /** A turn bound to a work item reached its model-round limit (`max_turns`). */
  "max_turns",
  /** A budget check (src/budget/). */
  "budget",
  /** An approval request (the action leash). */
  "approval",
  /** An MCP server asked the user for input during a tool call (src/mcp/elicitation.ts). */
  "mcp_elicitation",
]);
export type AskSource = z.infer<typeof AskSource>;

/** Who decided: the operator through the control plane or a binding, or a parent agent. */
export const AskDecider = z.union([
  z.object({ kind: z.literal("operator"), via: z.literal("control") }),
  z.object({
    kind: z.literal("operator"),
    via: z.literal("operator_binding"),
    binding_id: z.string(),
    actor_id: z.string(),
  }),
  z.object({ kind: z.literal("agent"), agent_id: z.string() }),
]);
export type AskDecider = z.infer<typeof AskDecider>;

/** One binding's delivery of the ask (kept so a restart re-delivers what was not accepted). */
export const AskDelivery = z.object({
  status: z.enum(["accepted_by_transport", "failed_to_submit"]),
  attempts: z.number().int(),
  at: z.string(),
});

export const AskRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  kind: AskKind,
  source: AskSource,
  scope: AskScope,
  /**
   * False for an agent-scope ask that holds nothing up while it waits (a consent to a
   * workspace hook: the hook does not run until approved, and the agent keeps working).
   */
  gates_agent: z.literal(false).optional(),
  work_item_id: z.string().optional(),
  /** One line: what the ask is about. */
  about: z.string(),
  /** The full question or account of what happened, as the person deciding reads it. */
  detail: z.string(),
  /**
   * The answers the ask accepts. Empty: any text. An option containing the word `N` takes a
   * positive whole number in its place (`continue N` accepts `continue 5`).
   */
  options: z.array(z.string()),
  /** Whether text outside the options is accepted too (an input ask's free answer). */
  free_text: z.boolean(),
  state: AskState,
  /** The chosen option or the answer's text (decided asks only). */
  decision: z.string().optional(),
  decided_by: AskDecider.optional(),
  decided_at: z.string().optional(),
  /** Why: the decider's note, or why it expired or was withdrawn. */
  reason: z.string().optional(),
  expires_at: z.string(),
  /** When it reached a final state. */
  closed_at: z.string().optional(),
  /** Facts the opener keeps with the ask (a budget's scope and numbers, a guard's count). */
  details: z.record(z.string(), z.unknown()),
  deliveries: z.record(z.string(), AskDelivery),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AskRecord = z.infer<typeof AskRecord>;

/** The options a runaway halt (guard or round limit) offers. */
export const RUNAWAY_OPTIONS = ["continue N", "block item", "cancel item"] as const;

/** Caps on what an ask may hold (every input is bounded). */
export const ASK_LIMITS = {
  about_chars: 300,
  detail_chars: 8_000,
  options: 16,
  option_chars: 200,
  decision_chars: 16_000,
  reason_chars: 2_000,
  /** `continue N`: the largest N. */
  max_count: 1_000,
} as const;

/** Default expiry: seven days (config `asks.expiry_hours`). */
export const DEFAULT_ASK_EXPIRY_HOURS = 168;

/**
 * Match an answer against an ask's options. Returns the normalized decision and, for an
 * option with `N`, the number; undefined when it matches none.
 */
export function matchOption(
  options: readonly string[],
  answer: string,
): { option: string; decision: string; count?: number } | undefined {
  const text = answer.trim().replace(/\s+/g, " ");
  for (const option of options) {
    const words = option.split(" ");
    const given = text.split(" ");
    if (words.length !== given.length) continue;
    let count: number | undefined;
    let ok = true;
    for (let i = 0; i < words.length; i++) {
      if (words[i] === "N") {
        if (!/^\d{1,7}$/.test(given[i]!)) {
          ok = false;
          break;
        }
        count = Number(given[i]);
      } else if (words[i]!.toLowerCase() !== given[i]!.toLowerCase()) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (count !== undefined && (count < 1 || count > ASK_LIMITS.max_count)) return undefined;
    const decision = words.map((w) => (w === "N" ? String(count) : w)).join(" ");
    return count === undefined ? { option, decision } : { option, decision, count };
  }
  return undefined;
}

/** Whether an ask in this state still holds up its agent or item (see docs/guardrails.md). */
export function holds(ask: Pick<AskRecord, "state" | "kind">): boolean {
  // An expired budget ask keeps its hold: the budget is still spent until it is raised or
  // its window turns over (the budget code withdraws it then).
  return ask.state === "pending" || (ask.state === "expired" && ask.kind === "budget");
}
