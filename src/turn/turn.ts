// One turn: assemble the prompt frame, call the model, run the tools it asks for, repeat
// until it answers without tools, then record the terminal record and the result brief.
// Every step is durable: assistant rounds, tool executions and their events are written
// as they happen, so a crash mid-turn leaves an honest partial record.
import type { AgentRecord } from "../domain/agent.ts";
import type { QueuedMessage } from "../domain/message.ts";
import {
  addTokenUsage,
  type FailureArtifact,
  type ProviderAttemptTimeline,
  type TokenUsage,
} from "../domain/provider.ts";
import type { TurnOutcome } from "../domain/closure.ts";
import {
  previewArguments,
  type EventPayload,
  type EventType,
  type NewEvent,
} from "../domain/events.ts";
import type {
  NewTranscriptEntry,
  TranscriptData,
  TranscriptEntryKind,
} from "../domain/transcript.ts";
import { HolonError } from "../domain/errors.ts";
import { createBrief, recordRuntimeFailure } from "../agent/briefs.ts";
import { AbortRunError, type TurnExecutor, type TurnRequest } from "../agent/runtime.ts";
import type {
  ConversationItem,
  ProviderRequest,
  ProviderResponse,
  ToolSpec,
} from "../providers/model.ts";
import type { ModelCandidate } from "../providers/types.ts";
import type { Store } from "../store/db.ts";
import type { TaskService } from "../tasks/service.ts";
import type { OutputBudget } from "../tools/budget.ts";
import {
  dispatch,
  type ToolDefinition,
  type ToolGuard,
  ToolRegistry,
  type ToolServices,
} from "../tools/registry.ts";
import { lowestAuthority } from "../policy/taint.ts";
import type { PromptContributor } from "../context/section.ts";
import { executionBinding, executionSnapshot } from "../workspace/roots.ts";
import type { ExecutionSnapshot } from "../domain/workspace.ts";
import type { CanonicalToolResult } from "../tools/envelope.ts";
import { buildFrame, renderIncoming } from "./prompt.ts";
import { sourceSchema } from "../providers/schema.ts";
import type { AuthorityClass } from "../domain/message.ts";
import type { ActionLeash } from "../policy/leash.ts";
import { workItemOf, type BudgetVerdict, type GateContext } from "../budget/gate.ts";
import type { CallRecord } from "../budget/ledger.ts";
import type { BudgetHold } from "../domain/budget.ts";

export type ModelCallResult =
  | {
      ok: true;
      response: ProviderResponse;
      timeline: ProviderAttemptTimeline;
      model_ref: string;
    }
  | {
      ok: false;
      failure: FailureArtifact;
      timeline: ProviderAttemptTimeline;
      aborted: boolean;
      /** Every model is rate-limited beyond the in-place cap: run the message again then. */
      retry_at?: string | undefined;
    };

export type ModelCall = (req: {
  candidates: ModelCandidate[];
  request: ProviderRequest;
  signal: AbortSignal;
}) => Promise<ModelCallResult>;

export type TurnDeps = {
  store: Store;
  registry: ToolRegistry;
  tasks: TaskService;
  /** Handed to every tool call as `ctx.services`. */
  toolServices: ToolServices;
  candidates(agent: AgentRecord): ModelCandidate[];
  callModel: ModelCall;
  budget(): OutputBudget;
  /** The prompt frame's contributors, in order (src/context/contributors.ts). */
  contributors: PromptContributor[];
  /**
   * Runs before every provider request with the request about to be sent; returns the one
   * to send. Context compaction plugs in here. The default sends it unchanged.
   */
  beforeProviderCall?: PreProviderHook;
  /** The execution snapshot recorded on `turn_context_built` (default: the host_local policy). */
  executionSnapshot?: (agent: AgentRecord) => ExecutionSnapshot;
  /** The action leash: rules, taint, hooks and approvals around every call (src/policy/). */
  leash?: ActionLeash;
  /** Told about every finished tool call, after its record is durable (skill activation). */
  afterTool?: (call: ToolCallDone) => Promise<void>;
  /**
   * Tools this agent has beyond the built-in ones (its MCP servers' tools, tools/mcp/), read
   * once at the start of each turn: a change reaches the next turn, never the running one.
   * The same array while nothing changed, so the tool list and the cached prefix stay put.
   */
  extraTools?: (agent: AgentRecord) => Promise<readonly ToolDefinition[]>;
  /** Tools this agent's profile leaves out of its catalog (a private child: SpawnAgent). */
  hiddenTools?: (agent: AgentRecord) => ReadonlySet<string>;
  /**
   * The provider refused a request as too long for its window: true to send the round again
   * (context management tightened its count), false to fail the turn.
   */
  onContextOverflow?: (info: {
    agent_id: string;
    run_id: string;
    model_ref: string | undefined;
  }) => boolean;
  /**
   * The ask gate (src/asks/): an agent-scope ask that holds the agent. Consulted before
   * every provider request, so an ask opened while a turn runs (a budget freeze) stops it
   * before its next call; the turn then ends waiting for the operator.
   */
  gate?: (agentId: string) => Promise<string | undefined>;
  /**
   * The budget gate, after the pre-provider hook (so it sees the request as sent): says
   * whether the call may go out, and records a hold when it may not.
   */
  budgetCheck?: (request: ProviderRequest, ctx: GateContext) => Promise<BudgetVerdict>;
  /** Writes the call's spend ledger row; runs inside the round's transaction. */
  recordCall?: (call: CallRecord) => Promise<void>;
  /** Told the usage a provider reported for a request (token estimate calibration). */
  afterProviderCall?: (info: {
    agent_id: string;
    run_id: string;
    model_ref: string;
    token_usage: TokenUsage | undefined;
  }) => void;
};

export type ToolCallDone = {
  agent_id: string;
  run_id: string;
  call_id: string;
  turn_index: number;
  tool_name: string;
  arguments: string;
  /** The working directory the call ran with. */
  cwd: string;
  canonical: CanonicalToolResult;
};

export type PreProviderHook = (
  request: ProviderRequest,
  ctx: { agent: AgentRecord; run_id: string; round: number; signal: AbortSignal },
) => ProviderRequest | Promise<ProviderRequest>;

/** Said in plain words when no model is configured, with the commands that fix it. */
export const NO_PROVIDER_SUMMARY =
  "No model provider is configured, so this message could not be worked on. Configure one with " +
  "`holon config set model.default <provider>/<model>` (for example openai/gpt-5.4) and make its " +
  "credential available (for example `export OPENAI_API_KEY=...`, or `holon config providers set` " +
  "for a custom endpoint).";

/** Upper bound on model rounds in one turn unless the message says otherwise (`run --max-turns`). */
export const DEFAULT_MAX_ROUNDS = 100;

export function toolSpecs(registry: ToolRegistry): ToolSpec[] {
  return specsOf(registry.list());
}

function specsOf(defs: readonly ToolDefinition[]): ToolSpec[] {
  return defs.map((t) => {
    const spec: ToolSpec = {
      name: t.name,
      description: t.description,
      parameters: t.parameters ?? sourceSchema(t.input),
    };
    if (t.freeform) {
      spec.freeform = {
        syntax: t.freeform.syntax,
        definition: t.freeform.definition,
        input_field: t.freeform.field,
      };
    }
    return spec;
  });
}

export class ProviderTurnExecutor implements TurnExecutor {
  private readonly deps: TurnDeps;
  private specs: ToolSpec[] | undefined;

  constructor(deps: TurnDeps) {
    this.deps = deps;
  }

  async run(req: TurnRequest): Promise<TurnOutcome> {
    const candidates = this.deps.candidates(req.agent);
    if (candidates.length === 0) {
      const store = this.deps.store;
      await store.tx(async () => {
        await req.begin();
        await recordRuntimeFailure(store, {
          agent_id: req.agent.agent_id,
          run_id: req.run_id,
          message_id: req.message.id,
          summary: NO_PROVIDER_SUMMARY,
          diagnostics: { kind: "no_provider_configured" },
        });
      });
      return { kind: "failed", summary: NO_PROVIDER_SUMMARY };
    }
    const specs = (this.specs ??= toolSpecs(this.deps.registry));
    const hidden = this.deps.hiddenTools?.(req.agent);
    const visible = hidden?.size ? specs.filter((t) => !hidden.has(t.name)) : specs;
    let extra: readonly ToolDefinition[] = NO_EXTRA;
    if (this.deps.extraTools) {
      try {
        extra = await this.deps.extraTools(req.agent);
      } catch {
        extra = NO_EXTRA; // a broken source of extra tools never stops the turn
      }
    }
    if (extra.length === 0) {
      return await new Turn(this.deps, visible, req, candidates, this.deps.registry).run();
    }
    const merged = this.merged(visible, extra);
    return await new Turn(this.deps, merged.specs, req, candidates, merged.registry).run();
  }

  private readonly mergedCache = new WeakMap<
    readonly ToolDefinition[],
    { base: ToolSpec[]; specs: ToolSpec[]; registry: ToolRegistry }
  >();

  /** The built-in catalog plus extra tools, kept per extra list (same input, same arrays). */
  private merged(base: ToolSpec[], extra: readonly ToolDefinition[]) {
    const hit = this.mergedCache.get(extra);
    if (hit && hit.base === base) return hit;
    const registry = new ToolRegistry();
    for (const t of this.deps.registry.list()) registry.register(t);
    const builtin = new Set(registry.list().map((t) => t.name));
    const added = extra.filter((t) => !builtin.has(t.name));
    for (const t of added) registry.register(t);
    const value = { base, specs: [...base, ...specsOf(added)], registry };
    this.mergedCache.set(extra, value);
    return value;
  }
}

const NO_EXTRA: readonly ToolDefinition[] = Object.freeze([]);

class Turn {
  private readonly deps: TurnDeps;
  private readonly specs: ToolSpec[];
  private readonly req: TurnRequest;
  /** The agent as the run found it; once the run's start is recorded, as it runs. */
  private agent: AgentRecord;
  private readonly conversation: ConversationItem[] = [];
  private usage: TokenUsage | undefined;
  private rounds = 0;
  /** Set when a tool asked to end the turn and rest (Sleep). */
  private sleep: { duration_ms: number | undefined } | undefined;
  private readonly candidates: ModelCandidate[];
  private readonly startedAt: number;
  private readonly turnIndex: number;
  /**
   * The lowest authority among what this turn consumes (taint, src/policy/taint.ts); an
   * external result (an MCP tool's) lowers it for the rest of the turn.
   */
  private authority: AuthorityClass;
  private readonly registry: ToolRegistry;
  /** When the last provider call ended (or the turn started): a ledger row's wall time. */
  private lastCallEnd: number;

  constructor(
    deps: TurnDeps,
    specs: ToolSpec[],
    req: TurnRequest,
    candidates: ModelCandidate[],
    registry: ToolRegistry,
  ) {
    this.deps = deps;
    this.registry = registry;
    this.candidates = candidates;
    this.specs = specs;
    this.req = req;
    this.agent = req.agent;
    this.startedAt = deps.store.clock.now().getTime();
    this.lastCallEnd = this.startedAt;
    this.turnIndex = req.agent.total_message_count + 1;
    this.authority = req.message.authority_class; // lowered by the leash at run start
  }

  private get store(): Store {
    return this.deps.store;
  }

  /**
   * A turn event; every one carries the run id. Call sites are checked against the catalog
   * through `T`; the cast is only because TypeScript cannot pair a generic kind with its payload.
   */
  private event<T extends EventType>(
    type: T,
    payload: Omit<EventPayload<T>, "run_id">,
  ): Promise<unknown> {
    // Forwarded, not awaited here: a turn writes a dozen events, each one async frame less.
    return this.store.tx(() =>
      this.store.appendEvent(this.agent.agent_id, {
        type,
        provenance: { message_id: this.req.message.id },
        payload: { run_id: this.req.run_id, ...payload },
      } as unknown as NewEvent),
    );
  }

  private transcript<K extends TranscriptEntryKind>(
    kind: K,
    data: TranscriptData<K>,
  ): Promise<unknown> {
    return this.store.transcript.append({
      id: this.store.ids.next("tr"),
      agent_id: this.agent.agent_id,
      created_at: this.store.clock.now().toISOString(),
      kind,
      run_id: this.req.run_id,
      message_id: this.req.message.id,
      data,
    } as NewTranscriptEntry);
  }

  async run(): Promise<TurnOutcome> {
    const leash = this.deps.leash;
    if (leash) this.authority = await leash.turnAuthority(this.req.agent, this.req.message);
    const { store } = this;
    const message = this.req.message;
    const { execution_root: executionRoot, cwd } = executionBinding(this.agent);
    const maxRounds = maxRoundsOf(message);

    // The run's start commits with the prompt's records: one transaction, and the frame is
    // built from the agent as it runs.
    const { frame, incoming, contextBuildMs } = await store.tx(async () => {
      this.agent = await this.req.begin();
      const buildStart = performance.now();
      const snapshot = (this.deps.executionSnapshot ?? executionSnapshot)(this.agent);
      const { frame, loaded } = await buildFrame(this.deps.contributors, {
        store,
        agent: this.agent,
        message,
        executionRoot,
        cwd,
        tools: this.specs,
        executionPolicy: snapshot.policy,
      });
      const incoming = renderIncoming(message);
      const contextBuildMs = round2(performance.now() - buildStart);
      await this.transcript("incoming_message", {
        text: incoming,
        kind: message.kind,
        origin: message.origin,
        trust: message.trust,
        authority_class: message.authority_class,
        delivery_surface: message.delivery_surface ?? null,
      });
      await this.event("turn_context_built", {
        context_build_ms: contextBuildMs,
        turn_index: this.turnIndex,
        tool_count: this.specs.length,
        prompt_cache_key: frame.cache?.prompt_cache_key ?? null,
        context_fingerprint: frame.cache?.context_fingerprint ?? null,
        loaded_agents_md: loaded,
        execution_root: executionRoot,
        cwd,
        execution_snapshot: snapshot,
      });
      return { frame, incoming, contextBuildMs };
    });
    this.conversation.push({ type: "user_text", text: incoming });

    if (this.deps.leash) {
      await this.deps.leash.noteTurnAuthority(this.agent.agent_id, message, this.authority);
      const start = await this.deps.leash.turnStart(this.agent, message, this.req.run_id, incoming);
      if (start.blocked !== null) {
        return await this.fail(
          `The prompt was blocked by a UserPromptSubmit hook: ${start.blocked}`,
          {
            kind: "prompt_blocked_by_hook",
          },
        );
      }
      for (const c of start.context)
        this.conversation.push({ type: "user_text", text: `[hook context] ${c}` });
      // Calls the operator approved run now, each once, and their results re-enter here.
      for (const call of await this.deps.leash.approvedCalls(this.agent)) {
        if (this.req.signal.aborted) return await this.aborted();
        const done = await this.runTool(call.call_id, call.tool_name, call.arguments, call.guard);
        this.conversation.push({ type: "user_text", text: call.report(done.rendered) });
      }
    }

    const candidates = this.candidates;
    let lastText = "";
    for (;;) {
      await this.drainInterjections("before_provider_request");
      if (this.req.signal.aborted) return await this.aborted();
      const gated = await this.deps.gate?.(this.agent.agent_id);
      if (gated) return await this.gated(gated, "agent", lastText);
      if (this.rounds >= maxRounds) {
        // A turn working on a work item halts with an ask on that item (the work plane opens
        // it); a one-shot run or a turn on no item fails as before.
        if (this.agent.current_work_item_id && message.delivery_surface !== "run_once") {
          await this.store.tx(
            async () =>
              await this.terminal("aborted", lastText, {
                reason: "max_rounds_exceeded",
                max_rounds: maxRounds,
              }),
          );
          return {
            kind: "await_operator",
            detail: `max_turns:${maxRounds}`,
            scope: "work_item",
            cause: "max_turns",
            rounds: maxRounds,
          };
        }
        return await this.fail(
          `The turn stopped after ${maxRounds} model rounds without finishing (round limit reached).`,
          { kind: "max_rounds_exceeded", max_rounds: maxRounds },
        );
      }
      this.rounds++;
      let request: ProviderRequest = {
        frame,
        conversation: this.conversation,
        tools: this.specs,
      };
      if (this.deps.beforeProviderCall) {
        try {
          request = await this.deps.beforeProviderCall(request, {
            agent: this.agent,
            run_id: this.req.run_id,
            round: this.rounds,
            signal: this.req.signal,
          });
        } catch (err) {
          // The context budget could not be met: fail explicitly rather than send a request
          // the provider would refuse.
          if (!(err instanceof HolonError)) throw err;
          // The hook opened an ask instead of sending (a budget stop): wait for its decision.
          if (err.kind === "ask_opened" && typeof err.details?.ask_id === "string") {
            this.rounds--;
            const scope = err.details.scope === "work_item" ? "work_item" : "agent";
            return await this.gated(err.details.ask_id, scope, lastText);
          }
          return await this.fail(`The turn cannot continue: ${err.message}.`, {
            kind: err.kind,
            ...err.details,
          });
        }
      }
      const gatedNow = await this.deps.gate?.(this.agent.agent_id);
      if (gatedNow) {
        this.rounds--;
        return await this.gated(gatedNow, "agent", lastText);
      }
      if (this.deps.budgetCheck) {
        const verdict = await this.deps.budgetCheck(request, {
          agent: this.agent,
          run_id: this.req.run_id,
          round: this.rounds,
          message,
          candidates,
        });
        if (!verdict.ok) {
          this.rounds--; // no call was made
          return await this.budgetStop(verdict.action, verdict.hold);
        }
        request = verdict.request;
      }
      const providerStartedAt = store.clock.now();
      const t0 = performance.now();
      const result = await this.deps.callModel({ candidates, request, signal: this.req.signal });
      const providerRoundMs = round2(performance.now() - t0);
      if (!result.ok) {
        this.usage = addTokenUsage(this.usage, result.timeline.aggregated_token_usage);
        if (result.aborted || this.req.signal.aborted) return await this.aborted(result.timeline);
        if (result.retry_at) return await this.retryAt(result.retry_at, result.timeline);
        if (
          result.failure.kind === "context_length_exceeded" &&
          this.deps.onContextOverflow?.({
            agent_id: this.agent.agent_id,
            run_id: this.req.run_id,
            model_ref: result.failure.model_ref,
          })
        ) {
          this.rounds--; // the same round again, with a tighter projection
          continue;
        }
        return await this.fail(`The model provider failed: ${result.failure.summary}`, {
          failure_artifact: result.failure,
          provider_attempt_timeline: result.timeline,
        });
      }
      const response = result.response;
      const roundUsage = response.token_usage;
      this.deps.afterProviderCall?.({
        agent_id: this.agent.agent_id,
        run_id: this.req.run_id,
        model_ref: result.model_ref,
        token_usage: roundUsage,
      });
      this.usage = addTokenUsage(this.usage, roundUsage);
      const text = response.blocks
        .filter((b) => b.type === "assistant_text")
        .map((b) => (b as { text: string }).text)
        .join("\n");
      const calls = response.blocks.filter((b) => b.type === "tool_call");
      if (text) lastText = text;
      // A round without tool calls usually ends the turn: its record, the look for
      // interjections and the turn's terminal record and brief commit together (one
      // transaction; a crash before it loses the round as a whole, nothing acknowledged).
      const ended = await store.tx(async (): Promise<TurnOutcome | undefined> => {
        await this.transcript("assistant_round", {
          round: this.rounds,
          text,
          tool_calls: calls,
          stop_reason: response.stop_reason,
          model_ref: result.model_ref,
          input_tokens: roundUsage?.input_tokens ?? 0,
          output_tokens: roundUsage?.output_tokens ?? 0,
          token_usage: roundUsage ?? null,
          provider_attempt_timeline: result.timeline,
        });
        await this.event("provider_round_completed", {
          round: this.rounds,
          model_ref: result.model_ref,
          token_usage: roundUsage ?? null,
          provider_attempt_timeline: result.timeline,
          context_build_ms: this.rounds === 1 ? contextBuildMs : 0,
          provider_round_ms: providerRoundMs,
          provider_started_at: providerStartedAt.toISOString(),
          provider_completed_at: store.clock.now().toISOString(),
          ...(response.continuation ? { continuation: response.continuation } : {}),
        });
        await this.event("assistant_round_recorded", {
          round: this.rounds,
          text_preview: text.length > 280 ? text.slice(0, 280) + "…" : text,
          tool_requests: calls.map((c) => c.name),
          tool_calls: calls.map((c) => ({
            call_id: c.call_id,
            tool_name: c.name,
            arguments_preview: previewArguments(c.arguments),
          })),
        });
        const callEnd = store.clock.now().getTime();
        const agentNow = (await store.agents.get(this.agent.agent_id)) ?? this.agent;
        await this.deps.recordCall?.({
          work_item_id: workItemOf(agentNow, message) ?? null,
          agent_id: this.agent.agent_id,
          run_id: this.req.run_id,
          round: this.rounds,
          kind: "round",
          model_ref: result.model_ref,
          usage: roundUsage ?? null,
          elapsed_ms: callEnd - this.lastCallEnd,
        });
        this.lastCallEnd = callEnd;
        const agent = (await store.agents.get(this.agent.agent_id))!;
        await store.agents.put({
          ...agent,
          total_input_tokens: agent.total_input_tokens + (roundUsage?.input_tokens ?? 0),
          total_output_tokens: agent.total_output_tokens + (roundUsage?.output_tokens ?? 0),
          total_model_rounds: agent.total_model_rounds + 1,
        });
        this.conversation.push(...response.blocks);
        if (calls.length > 0) return undefined;
        await this.drainInterjections("after_provider_round");
        // An interjection that arrived with the final answer gets its own round.
        if (this.conversation.at(-1)?.type === "user_text" && !this.sleep) return undefined;
        const outcome = await this.complete(lastText, text);
        // No Stop hook to run in between: the run settles in this same commit.
        if (!(await this.deps.leash?.hasStopHooks(this.agent))) {
          await this.req.end(outcome);
          this.settled = true;
        }
        return outcome;
      });
      if (ended) return this.settled ? ended : this.stopHooks(ended);
      if (calls.length === 0) continue;

      await this.drainInterjections("before_tool_execution", true);
      try {
        for (const call of calls) {
          if (call.type !== "tool_call") continue;
          if (this.req.signal.aborted) return await this.aborted();
          const outcome = await this.runTool(call.call_id, call.name, call.arguments);
          this.conversation.push({
            type: "tool_result",
            call_id: call.call_id,
            output: outcome.rendered,
            is_error: outcome.canonical.status === "error",
            // Images stay in this turn's conversation only; the transcript keeps the text.
            ...(outcome.images?.length ? { images: outcome.images } : {}),
          });
        }
      } finally {
        // Calls of this round that need approval become one ask, which gates the next round.
        await this.deps.leash?.roundEnded(this.req.run_id);
      }
      await this.flushDeferredInterjections();
      await this.drainInterjections("after_tool_results");
      if (this.sleep) return await this.completed(lastText, text);
    }
  }

  private deferred: QueuedMessage[] = [];
  /** The run settled with the turn's last records (TurnRequest.end): no Stop hooks to run. */
  private settled = false;

  /**
   * Queued trusted interject prompts become model-visible at safe points. Before tool
   * execution they are claimed now but shown after the tool results, so the tool calls the
   * model already made keep their results next to them.
   */
  private async drainInterjections(boundary: string, defer = false): Promise<void> {
    const taken = await this.req.takeInterjections(boundary);
    if (taken.length === 0) return;
    if (defer) {
      this.deferred.push(...taken);
      return;
    }
    for (const m of taken) await this.pushInterjection(m);
  }

  private async flushDeferredInterjections(): Promise<void> {
    for (const m of this.deferred.splice(0)) await this.pushInterjection(m);
  }

  private async pushInterjection(m: QueuedMessage): Promise<void> {
    const text = renderIncoming(m, "Operator message received while this turn was in progress");
    this.conversation.push({ type: "user_text", text });
    await this.store.tx(
      async () =>
        await this.transcript("incoming_message", {
          text,
          kind: m.kind,
          interjected_message_id: m.id,
        }),
    );
  }

  private async runTool(callId: string, name: string, args: string, guard?: ToolGuard) {
    const { store } = this;
    const started = store.clock.now();
    // Each call follows the binding as it is now: UseWorkspace may have moved it this turn.
    const current = (await store.agents.get(this.agent.agent_id)) ?? this.agent;
    const { execution_root: executionRoot, cwd } = executionBinding(current);
    const outcome = await dispatch(this.registry, name, args, {
      agent: current,
      run_id: this.req.run_id,
      message: this.req.message,
      call_id: callId,
      execution_root: executionRoot,
      cwd,
      signal: this.req.signal,
      budget: this.deps.budget(),
      tasks: this.deps.tasks,
      services: this.deps.toolServices,
      policy_authority: this.authority,
      ...(guard ? { guard } : this.deps.leash ? { guard: this.deps.leash } : {}),
    });
    if (outcome.request?.kind === "sleep")
      this.sleep = { duration_ms: outcome.request.duration_ms };
    if (outcome.external_evidence && this.authority !== "external_evidence") {
      this.authority = lowestAuthority(this.authority, "external_evidence");
      await this.deps.leash?.noteTurnAuthority(
        this.agent.agent_id,
        this.req.message,
        this.authority,
      );
    }
    await store.tx(async () => {
      await this.transcript("tool_execution", {
        call_id: callId,
        tool_name: name,
        arguments: args.length > 20_000 ? args.slice(0, 20_000) + "…" : args,
        envelope: outcome.canonical,
        rendered: outcome.rendered,
        duration_ms: outcome.duration_ms,
        started_at: started.toISOString(),
      });
      const payload: Omit<EventPayload<"tool_executed">, "run_id"> = {
        call_id: callId,
        tool_name: name,
        status: outcome.canonical.status,
        summary_text: outcome.canonical.summary_text,
        duration_ms: outcome.duration_ms,
        envelope: outcome.canonical,
        arguments_preview: previewArguments(args),
      };
      if (outcome.canonical.error) {
        payload.tool_error = outcome.canonical.error;
        payload.error = outcome.rendered;
      }
      await this.event(
        outcome.canonical.status === "error" ? "tool_execution_failed" : "tool_executed",
        payload,
      );
    });
    this.req.toolDone?.({ tool_name: name, arguments: args, envelope: outcome.canonical });
    await this.deps.afterTool?.({
      agent_id: this.agent.agent_id,
      run_id: this.req.run_id,
      call_id: callId,
      turn_index: this.turnIndex,
      tool_name: name,
      arguments: args,
      cwd,
      canonical: outcome.canonical,
    });
    return outcome;
  }

  private async terminal(
    kind: "completed" | "aborted",
    lastAssistantMessage: string,
    extra: Record<string, unknown> = {},
  ) {
    const { store } = this;
    const now = store.clock.now();
    const record = {
      turn_index: this.turnIndex,
      kind,
      last_assistant_message: lastAssistantMessage,
      completed_at: now.toISOString(),
      duration_ms: now.getTime() - this.startedAt,
      model_rounds: this.rounds,
      token_usage: this.usage ?? null,
      ...extra,
    };
    await this.transcript("turn_terminal", record);
    await this.event("turn_terminal", record);
    const agent = (await store.agents.get(this.agent.agent_id))!;
    const next: AgentRecord = { ...agent };
    if (this.usage) next.last_turn_token_usage = this.usage;
    await store.agents.put(next);
  }

  /** The terminal record, then the Stop hooks (which may admit one follow-up). */
  private async completed(lastText: string, finalRoundText: string): Promise<TurnOutcome> {
    return this.stopHooks(await this.complete(lastText, finalRoundText));
  }

  /** After the terminal record committed: the Stop hooks (which may admit one follow-up). */
  private async stopHooks(outcome: TurnOutcome): Promise<TurnOutcome> {
    await this.deps.leash?.turnStop(this.agent, this.req.message, this.req.run_id, this.authority);
    return outcome;
  }

  private async complete(lastText: string, finalRoundText: string): Promise<TurnOutcome> {
    const { store } = this;
    await store.tx(async () => {
      await this.terminal("completed", lastText);
      // The brief is the final assistant text, even when empty; never a made-up summary.
      await createBrief(store, {
        agent_id: this.agent.agent_id,
        kind: "result",
        text: finalRoundText,
        related_message_id: this.req.message.id,
      });
    });
    return await this.restingOutcome();
  }

  /** What the turn's end means for the agent: rest, a timed sleep, a wait on tasks, or done. */
  private async restingOutcome(): Promise<TurnOutcome> {
    if (!this.sleep) return { kind: "settled" };
    const ms = this.sleep.duration_ms;
    if (ms !== undefined) {
      const wakeAt = new Date(this.store.clock.now().getTime() + ms).toISOString();
      return { kind: "sleep_until", wake_at: wakeAt, duration_ms: ms };
    }
    // Resting while tasks that report back still run is waiting on them.
    const reentry = (await this.store.tasks.activeForAgent(this.agent.agent_id))
      .filter((t) => t.terminal_reentry)
      .map((t) => t.id);
    return reentry.length > 0 ? { kind: "await_tasks", task_ids: reentry } : { kind: "rest" };
  }

  private async aborted(timeline?: ProviderAttemptTimeline): Promise<TurnOutcome> {
    const reason = abortReason(this.req.signal);
    await this.store.tx(async () => {
      await this.terminal("aborted", "", {
        reason,
        ...(timeline ? { provider_attempt_timeline: timeline } : {}),
      });
      if (reason === "operator_aborted") {
        await createBrief(this.store, {
          agent_id: this.agent.agent_id,
          kind: "failure",
          text: "The operator aborted this run.",
          related_message_id: this.req.message.id,
        });
      }
    });
    return { kind: "aborted", reason };
  }

  /** An ask holds the agent (or the hook opened one): end the turn waiting for its decision. */
  private async gated(
    askId: string,
    scope: "agent" | "work_item",
    lastText: string,
  ): Promise<TurnOutcome> {
    await this.store.tx(
      async () =>
        await this.terminal("aborted", lastText, { reason: "awaiting_operator", ask_id: askId }),
    );
    return { kind: "await_operator", detail: `ask:${askId}`, ask_id: askId, scope };
  }

  /** Rate-limited everywhere: end the turn unfinished; the message runs again at `retryAt`. */
  private async retryAt(retryAt: string, timeline: ProviderAttemptTimeline): Promise<TurnOutcome> {
    await this.store.tx(async () => {
      await this.terminal("aborted", "", {
        reason: "provider_rate_limited",
        retry_at: retryAt,
        provider_attempt_timeline: timeline,
      });
    });
    return { kind: "retry_at", retry_at: retryAt, reason: "provider_rate_limited" };
  }

  /**
   * A budget stopped the call before it was sent. A run's budget fails the run; an agent's
   * or a work item's ends the turn, unfinished, at zero cost: the agent waits for the
   * operator (or the window's turn) and the item waits blocked while other work may run.
   */
  private async budgetStop(
    action: "hold_agent" | "hold_work_item" | "fail_run",
    hold: BudgetHold,
  ): Promise<TurnOutcome> {
    // `holon run` never waits: any budget that stops its call ends the run (exit code 3);
    // an agent's or item's hold stays recorded for that agent's later work.
    if (action === "fail_run" || this.req.message.delivery_surface === "run_once") {
      return await this.fail(`The run stopped before a model call: ${hold.summary}.`, {
        kind: "budget_exhausted",
        budget_hold: hold,
      });
    }
    await this.store.tx(async () => {
      await this.terminal("aborted", "", { reason: "budget_exhausted" });
      await createBrief(this.store, {
        agent_id: this.agent.agent_id,
        kind: "failure",
        text:
          hold.reason === "frozen"
            ? `Stopped before a model call: ${hold.summary}. Lift it with \`holon budget unfreeze ${this.agent.agent_id}\`.`
            : `Stopped before a model call: ${hold.summary}. Raise it with \`holon budget raise ${this.agent.agent_id}\`.`,
        related_message_id: this.req.message.id,
      });
    });
    return action === "hold_agent"
      ? { kind: "await_operator", detail: hold.summary }
      : { kind: "rest" };
  }

  private async fail(summary: string, diagnostics: Record<string, unknown>): Promise<TurnOutcome> {
    await this.store.tx(async () => {
      await this.terminal("aborted", "", { reason: "runtime_failure" });
      const d: Record<string, unknown> = { ...diagnostics };
      if (this.usage) d.token_usage = this.usage;
      await recordRuntimeFailure(this.store, {
        agent_id: this.agent.agent_id,
        run_id: this.req.run_id,
        message_id: this.req.message.id,
        summary,
        diagnostics: d,
      });
    });
    return { kind: "failed", summary };
  }
}

function abortReason(signal: AbortSignal): string {
  const r: unknown = signal.reason;
  return r instanceof AbortRunError ? r.reason : "aborted";
}

function maxRoundsOf(message: QueuedMessage): number {
  const v = message.metadata?.max_turns;
  return typeof v === "number" && Number.isInteger(v) && v > 0 ? v : DEFAULT_MAX_ROUNDS;
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
