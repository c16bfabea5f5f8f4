// Turn-local compaction: keeps one long turn inside the model's window. The turn loop's
// conversation stays the canonical ledger (it and the transcript keep every round); before
// each provider request this hook builds a bounded projection of it:
//
//   incoming message + [runtime recap of older completed rounds] + exact recent rounds
//
// The budget rule: while the projection is under the soft limit it is sent as is; above
// it, the compaction boundary advances until the projection is under the target, keeping
// at least `keep_recent_rounds` rounds exact (down to one, then shorter tool outputs in
// that tail, if it has to). The boundary only moves forward, and the recap is rebuilt only
// when it moves, so between compactions the projected prefix stays byte-identical (good
// for provider prompt caches). When even the retained tail cannot fit, the turn fails with
// `context_budget_exceeded` instead of sending a request the provider would refuse.
import { HolonError } from "../domain/errors.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { TokenUsage } from "../domain/provider.ts";
import type { ConversationItem, ProviderRequest } from "../providers/model.ts";
import type { Store } from "../store/db.ts";
import type { ContextLimits, ContextSettings } from "./budget.ts";
import { buildRecap, digestRound, type RoundDigest, type ToolEvidence } from "./recap.ts";
import {
  estimateConversation,
  estimateFrame,
  estimateItem,
  TokenCalibration,
  tokenCounterFor,
} from "./tokens.ts";

export type HookContext = {
  agent: AgentRecord;
  run_id: string;
  round: number;
  signal: AbortSignal;
};

/** A provider-side compaction of a request's conversation (OpenAI Responses compact route). */
export type RemoteCompact = (
  agent: AgentRecord,
  request: ProviderRequest,
  signal: AbortSignal,
) => Promise<
  | {
      ok: true;
      items: unknown[];
      compaction_items: number;
      encrypted_bytes: number;
      input_items: number;
    }
  | { ok: false; reason: string; status: number | null; message: string }
  | null
>;

/** A finished tool call as the turn loop reports it (turn/turn.ts `afterTool`). */
export type ToolCallNote = {
  run_id: string;
  call_id: string;
  tool_name: string;
  canonical: {
    tool_name: string;
    status: string;
    summary_text: string;
    result?: unknown;
    error?: { kind: string; message: string; recovery_hint?: string | undefined } | null;
  };
};

type RunState = {
  agent_id: string;
  evidence: Map<string, ToolEvidence>;
  digests: RoundDigest[];
  /** Rounds [0, boundary) are in the recap. */
  boundary: number;
  recap: string;
  last_estimate: number;
  /** The same, calibrated to the provider's own counts: the budget check's input estimate. */
  last_calibrated: number;
  last_model: string | null;
  /** The provider-compacted window and how many rounds it covers. */
  window: { item: ConversationItem; covered: number } | undefined;
  compactions: number;
  rounds_compacted: number;
  /** Context-window refusals from the provider this run (see noteOverflow). */
  overflows: number;
  /** The provider refused the last request as too long: compact remotely if enabled. */
  refused: boolean;
};

const MAX_RUNS = 256;
const SHORT_OUTPUT_CHARS = 2_000;

export type CompactorDeps = {
  store: Store;
  limits(agent: AgentRecord): ContextLimits;
  settings(): ContextSettings;
  calibration?: TokenCalibration;
  /** Remote compaction for the agent's model, when its transport has one (else null). */
  remoteCompact?: RemoteCompact;
  /** Runs just before a compaction replaces rounds (the PreCompact hooks; never blocks it). */
  beforeCompact?: (
    agent: AgentRecord,
    info: { run_id: string; round: number; kind: "turn_local_recap" | "remote_compaction" },
  ) => Promise<void>;
};

export class TurnCompactor {
  private readonly deps: CompactorDeps;
  readonly calibration: TokenCalibration;
  private readonly runs = new Map<string, RunState>();
  /** Per agent since the host started: compactions done and rounds compacted. */
  private readonly counts = new Map<string, { compactions: number; rounds_compacted: number }>();

  constructor(deps: CompactorDeps) {
    this.deps = deps;
    this.calibration = deps.calibration ?? new TokenCalibration();
  }

  private state(runId: string, agentId: string): RunState {
    let s = this.runs.get(runId);
    if (!s) {
      s = {
        agent_id: agentId,
        evidence: new Map(),
        digests: [],
        boundary: 0,
        recap: "",
        last_estimate: 0,
        last_calibrated: 0,
        last_model: null,
        window: undefined,
        compactions: 0,
        rounds_compacted: 0,
        overflows: 0,
        refused: false,
      };
      this.runs.set(runId, s);
      if (this.runs.size > MAX_RUNS) this.runs.delete(this.runs.keys().next().value!);
    }
    return s;
  }

  counters(agentId: string): { compactions: number; rounds_compacted: number } {
    return this.counts.get(agentId) ?? { compactions: 0, rounds_compacted: 0 };
  }

  /** What compaction did in one run (read at the turn boundary for the agent's totals). */
  /** The input tokens the last request of this run was estimated at (budget checks). */
  inputEstimate(runId: string): number | undefined {
    return this.runs.get(runId)?.last_calibrated;
  }

  runStats(runId: string): { compactions: number; rounds_compacted: number } {
    const s = this.runs.get(runId);
    return { compactions: s?.compactions ?? 0, rounds_compacted: s?.rounds_compacted ?? 0 };
  }

  /** Records the structured evidence of a finished tool call for the recap. */
  noteToolCall(call: ToolCallNote): void {
    const s = this.runs.get(call.run_id);
    if (!s) return;
    const c = call.canonical;
    const handles: string[] = [];
    const json = JSON.stringify(c.result ?? {}).slice(0, 4_000);
    for (const m of json.matchAll(
      /"(task_id|work_item_id|agent_id|artifact_path)":"([^"]{1,120})"/g,
    )) {
      if (!handles.includes(m[2]!)) handles.push(m[2]!);
    }
    s.evidence.set(call.call_id, {
      tool_name: c.tool_name,
      status: c.status,
      summary: c.summary_text,
      error_kind: c.error?.kind,
      error_message: c.error?.message,
      recovery_hint: c.error?.recovery_hint,
      handles: handles.slice(0, 6),
    });
  }

  /**
   * The provider refused a request as too long although the count said it fit: tighten the
   * model's correction factor and ask for the round again, at most twice per run.
   */
  noteOverflow(runId: string, modelRef: string | undefined): boolean {
    const s = this.runs.get(runId);
    if (!s || s.overflows >= 2) return false;
    s.overflows++;
    s.refused = true;
    const ref = modelRef ?? s.last_model;
    if (!ref) return false;
    this.calibration.tighten(ref);
    return true;
  }

  /** Corrects the estimator with the provider's reported input tokens. */
  noteUsage(runId: string, modelRef: string, usage: TokenUsage | undefined | null): void {
    const s = this.runs.get(runId);
    if (!s || !usage) return;
    this.calibration.observe(modelRef, s.last_estimate, usage.input_tokens);
  }

  /** The pre-provider-call hook. */
  readonly hook = async (request: ProviderRequest, ctx: HookContext): Promise<ProviderRequest> => {
    const limits = this.deps.limits(ctx.agent);
    const settings = this.deps.settings();
    const s = this.state(ctx.run_id, ctx.agent.agent_id);
    const factor = this.calibration.factor(limits.model_ref ?? undefined);
    const count = tokenCounterFor(limits.model_ref);
    const conv = (items: readonly ConversationItem[]) => estimateConversation(items, count);
    const frame = estimateFrame(request, count);
    const { prefix, rounds } = segment(request.conversation);
    const cost = rounds.map((r) => conv(r));
    // suffix[i] = cost of rounds i..end
    const suffix = new Array<number>(rounds.length + 1).fill(0);
    for (let i = rounds.length - 1; i >= 0; i--) suffix[i] = suffix[i + 1]! + cost[i]!;
    const est = (raw: number) => Math.ceil(raw * factor);
    const full = est(frame + conv(prefix) + suffix[0]!);

    // What precedes the recap: the incoming message, or the provider-compacted window
    // that replaced it and the rounds it covers.
    const base = () => (s.window ? [s.window.item] : prefix);
    const baseCost = () => conv(base());
    const recapCost = () =>
      s.recap ? estimateItem({ type: "user_text", text: s.recap }, count) : 0;
    const projected = (b: number) => est(frame + baseCost() + recapCost() + suffix[b]!);
    const floor = s.window?.covered ?? 0;
    s.boundary = Math.max(floor, Math.min(s.boundary, Math.max(0, rounds.length - 1)));
    s.last_model = limits.model_ref;

    let reset: "turn_local_recap" | "remote_compaction" | undefined;
    if (projected(s.boundary) > limits.soft && rounds.length - floor > 1) {
      const before = projected(s.boundary);
      const keep = Math.max(1, settings.keep_recent_rounds);
      const recapBound = limits.recap + 16;
      const fixed = frame + baseCost() + recapBound;
      let b = Math.max(s.boundary, floor + 1);
      const maxB = Math.max(floor, rounds.length - keep);
      while (b < maxB && est(fixed + suffix[b]!) > limits.target) b++;
      // Even the configured tail is too big: keep fewer rounds exactly, down to one.
      while (b < rounds.length - 1 && est(fixed + suffix[b]!) > limits.prompt) b++;
      if (b > s.boundary) {
        await this.deps.beforeCompact?.(ctx.agent, {
          run_id: ctx.run_id,
          round: ctx.round,
          kind: "turn_local_recap",
        });
        this.digest(s, rounds, b);
        s.recap = buildRecap(s.digests.slice(floor, b), limits.recap);
        const compactedNow = b - s.boundary;
        s.boundary = b;
        reset = "turn_local_recap";
        await this.compacted(ctx, s, limits, "turn_local_recap", {
          compacted: compactedNow,
          retained: rounds.length - b,
          before,
          after: projected(b),
          recap: est(recapCost()),
          full,
        });
      }
    }

    // Remote compaction (OpenAI Responses, `context.remote_compaction`): only when the local
    // projection still does not fit under the soft limit, or the provider just refused the
    // previous request as too long.
    const refused = s.refused;
    s.refused = false;
    if (
      settings.remote_compaction &&
      this.deps.remoteCompact &&
      (projected(s.boundary) > limits.soft || refused)
    ) {
      const before = projected(s.boundary);
      await this.deps.beforeCompact?.(ctx.agent, {
        run_id: ctx.run_id,
        round: ctx.round,
        kind: "remote_compaction",
      });
      const projection = this.projection(s, prefix, rounds, rounds.slice(s.boundary).flat());
      const res = await this.deps.remoteCompact(
        ctx.agent,
        { ...request, conversation: projection },
        ctx.signal,
      );
      if (res && res.ok) {
        const covered = rounds.length - s.boundary;
        s.window = {
          item: { type: "provider_window", family: "openai_responses", items: res.items },
          covered: rounds.length,
        };
        s.boundary = rounds.length;
        s.recap = "";
        reset = "remote_compaction";
        await this.compacted(ctx, s, limits, "remote_compaction", {
          compacted: covered,
          retained: 0,
          before,
          after: projected(s.boundary),
          recap: 0,
          full,
          remote: {
            compaction_items: res.compaction_items,
            encrypted_bytes: res.encrypted_bytes,
            input_items: res.input_items,
          },
        });
      } else if (res) {
        await this.deps.store.tx(
          async () =>
            await this.deps.store.appendEvent(ctx.agent.agent_id, {
              type: "remote_compaction_skipped",
              payload: {
                run_id: ctx.run_id,
                round: ctx.round,
                reason: res.reason,
                status: res.status,
                message: res.message.slice(0, 500),
              },
            }),
        );
      }
    }

    let tail = rounds.slice(s.boundary).flat();
    let total = projected(s.boundary);
    let shortened = false;
    if (total > limits.prompt) {
      shortened = true;
      // Stricter previews for the retained tail's tool outputs, then give up explicitly.
      tail = tail.map((it) =>
        it.type === "tool_result" && it.output.length > SHORT_OUTPUT_CHARS
          ? { ...it, output: shorten(it.output) }
          : it,
      );
      total = est(frame + baseCost() + recapCost() + conv(tail));
      if (total > limits.prompt) {
        throw new HolonError(
          "context_budget_exceeded",
          `the request needs about ${total} tokens but the model's prompt budget is ${limits.prompt} (window ${limits.window}); the most recent round alone does not fit`,
          {
            details: {
              estimated_tokens: total,
              budget_tokens: limits.prompt,
              window_tokens: limits.window,
              model_ref: limits.model_ref,
            },
          },
        );
      }
    }
    s.last_estimate = Math.ceil(total / factor);
    s.last_calibrated = Math.ceil(total);
    if (s.boundary === 0 && !s.window && !shortened) return request;
    const out: ProviderRequest = {
      ...request,
      conversation: this.projection(s, prefix, rounds, tail),
    };
    if (reset) out.continuation_reset = reset;
    return out;
  };

  private projection(
    s: RunState,
    prefix: ConversationItem[],
    _rounds: ConversationItem[][],
    tail: ConversationItem[],
  ): ConversationItem[] {
    const out: ConversationItem[] = s.window ? [s.window.item] : [...prefix];
    if (s.recap) out.push({ type: "user_text", text: s.recap });
    out.push(...tail);
    return out;
  }

  private async compacted(
    ctx: HookContext,
    s: RunState,
    limits: ContextLimits,
    strategy: "turn_local_recap" | "remote_compaction",
    f: {
      compacted: number;
      retained: number;
      before: number;
      after: number;
      recap: number;
      full: number;
      remote?: { compaction_items: number; encrypted_bytes: number; input_items: number };
    },
  ): Promise<void> {
    s.compactions++;
    s.rounds_compacted += f.compacted;
    const c = this.counters(ctx.agent.agent_id);
    this.counts.set(ctx.agent.agent_id, {
      compactions: c.compactions + 1,
      rounds_compacted: c.rounds_compacted + f.compacted,
    });
    await this.deps.store.tx(
      async () =>
        await this.deps.store.appendEvent(ctx.agent.agent_id, {
          type: "context_compacted",
          payload: {
            run_id: ctx.run_id,
            round: ctx.round,
            strategy,
            compacted_rounds: s.boundary,
            retained_rounds: f.retained,
            before_tokens: f.before,
            after_tokens: f.after,
            recap_tokens: f.recap,
            budget_tokens: limits.prompt,
            window_tokens: limits.window,
            full_conversation_tokens: f.full,
            ...(f.remote ? { remote: f.remote } : {}),
          },
        }),
    );
  }

  private digest(s: RunState, rounds: ConversationItem[][], upTo: number): void {
    for (let i = s.digests.length; i < upTo; i++) {
      s.digests.push(digestRound(i + 1, rounds[i]!, (id) => s.evidence.get(id)));
    }
  }
}

/** Splits a conversation into the leading items (the incoming message) and its rounds. */
export function segment(items: readonly ConversationItem[]): {
  prefix: ConversationItem[];
  rounds: ConversationItem[][];
} {
  const prefix: ConversationItem[] = [];
  const rounds: ConversationItem[][] = [];
  let prevResponse = false;
  for (const it of items) {
    const response =
      it.type === "assistant_text" || it.type === "tool_call" || it.type === "reasoning";
    if (response && !prevResponse) rounds.push([]);
    if (rounds.length === 0) prefix.push(it);
    else rounds.at(-1)!.push(it);
    prevResponse = response;
  }
  return { prefix, rounds };
}

function shorten(text: string): string {
  const half = SHORT_OUTPUT_CHARS / 2;
  return `${text.slice(0, half)}\n[… ${text.length - SHORT_OUTPUT_CHARS} characters left out to fit the context budget …]\n${text.slice(-half)}`;
}
