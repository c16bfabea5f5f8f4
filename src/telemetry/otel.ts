// The OpenTelemetry side of tracing: the only module that imports the SDK, loaded by
// tracing.ts with `await import()` only when traces are on. It turns a turn into spans
// named and attributed after the GenAI semantic conventions:
//
//   invoke_agent <agent>          one per turn (parent: a trusted W3C traceparent, if any)
//     admission <message kind>    each consumed message, from its admission to the turn
//     compact_context             when the pre-provider hook compacted the request
//     chat <model>                one per provider attempt (retries and fallbacks too)
//     execute_tool <name>         one per tool call
//
// Work that outlives its turn is linked, never nested: the tool call that created a task,
// timer, callback trigger or child is stored (store/trace-links.ts) and the later turn that
// consumes its result links to it. Spans go through a bounded queue to one export at a
// time: a slow or dead collector fills the queue, further spans are dropped and counted,
// and nothing on the turn's path ever waits for the network. Spans still open when the
// process is killed are lost.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  isSpanContextValid,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from "@opentelemetry/api";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from "@opentelemetry/sdk-trace";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { readFileSync } from "node:fs";
import type { TurnRequest } from "../agent/runtime.ts";
import type { TurnOutcome } from "../domain/closure.ts";
import type { CatalogEvent } from "../domain/events.ts";
import type { MessageEnvelope, QueuedMessage } from "../domain/message.ts";
import type { ProviderAttemptRecord, TokenUsage } from "../domain/provider.ts";
import { systemText, type ConversationItem, type ResponseBlock } from "../providers/model.ts";
import { TraceLinksRepo } from "../store/trace-links.ts";
import type {
  ChatRequest,
  ChatResult,
  IncomingTrace,
  RecorderDeps,
  SpanStats,
  TraceRecorder,
  TraceSettings,
} from "./trace-types.ts";

/** One content attribute (prompt, completion, tool arguments…) is cut beyond this. */
export const CONTENT_MAX_CHARS = 32_768;

const TRUSTED_ADMISSIONS = new Set([
  "control_authenticated",
  "external_trigger_capability",
  "operator_transport_authenticated",
  "local_process",
]);

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$/;

/** A W3C traceparent as a remote span context, or undefined when malformed or all zero. */
export function parseTraceparent(tp: string, tracestate?: string): SpanContext | undefined {
  if (tp.length > 256) return undefined;
  const m = TRACEPARENT.exec(tp.trim().toLowerCase());
  if (!m || m[1] === "ff" || (m[1] === "00" && tp.trim().length !== 55)) return undefined;
  const ctx: SpanContext = {
    traceId: m[2]!,
    spanId: m[3]!,
    traceFlags: parseInt(m[4]!, 16) & 1,
    isRemote: true,
  };
  void tracestate;
  return isSpanContextValid(ctx) ? ctx : undefined;
}

function traceparentOf(ctx: SpanContext): string {
  return `00-${ctx.traceId}-${ctx.spanId}-0${ctx.traceFlags & TraceFlags.SAMPLED ? 1 : 0}`;
}

function clip(text: string): string {
  return text.length > CONTENT_MAX_CHARS
    ? `${text.slice(0, CONTENT_MAX_CHARS)}…[${text.length - CONTENT_MAX_CHARS} more characters]`
    : text;
}

/** GenAI's well-known finish reasons. */
function finishReason(stop: string): string {
  switch (stop) {
    case "end_turn":
      return "stop";
    case "tool_use":
      return "tool_call";
    case "max_tokens":
      return "length";
    case "refusal":
      return "content_filter";
    default:
      return stop;
  }
}

function splitModelRef(ref: string): [provider: string, model: string] {
  const slash = ref.indexOf("/");
  return slash > 0 ? [ref.slice(0, slash), ref.slice(slash + 1)] : ["unknown", ref];
}

/** The GenAI `gen_ai.input.messages` shape of the conversation. */
function inputMessages(items: readonly ConversationItem[]): unknown[] {
  const out: { role: string; parts: unknown[] }[] = [];
  const push = (role: string, part: unknown) => {
    const last = out.at(-1);
    if (last && last.role === role) last.parts.push(part);
    else out.push({ role, parts: [part] });
  };
  for (const item of items) {
    switch (item.type) {
      case "user_text":
        push("user", { type: "text", content: item.text });
        break;
      case "assistant_text":
        push("assistant", { type: "text", content: item.text });
        break;
      case "tool_call":
        push("assistant", {
          type: "tool_call",
          id: item.call_id,
          name: item.name,
          arguments: item.arguments,
        });
        break;
      case "tool_result":
        push("tool", { type: "tool_call_response", id: item.call_id, response: item.output });
        break;
      default:
        break; // reasoning and provider windows are opaque provider state
    }
  }
  return out;
}

function outputMessages(blocks: readonly ResponseBlock[], finish: string): unknown[] {
  const parts: unknown[] = [];
  for (const b of blocks) {
    if (b.type === "assistant_text") parts.push({ type: "text", content: b.text });
    else if (b.type === "tool_call")
      parts.push({ type: "tool_call", id: b.call_id, name: b.name, arguments: b.arguments });
  }
  return [{ role: "assistant", parts, finish_reason: finish }];
}

function usageAttributes(u: TokenUsage | undefined | null): Attributes {
  if (!u) return {};
  const a: Attributes = {
    "gen_ai.usage.input_tokens": u.input_tokens,
    "gen_ai.usage.output_tokens": u.output_tokens,
  };
  if (u.cache_read_input_tokens !== undefined)
    a["gen_ai.usage.cache_read.input_tokens"] = u.cache_read_input_tokens;
  if (u.cache_creation_input_tokens !== undefined)
    a["gen_ai.usage.cache_creation.input_tokens"] = u.cache_creation_input_tokens;
  if (u.reasoning_tokens !== undefined) a["holon.usage.reasoning_tokens"] = u.reasoning_tokens;
  return a;
}

/**
 * Batches ended spans into one export at a time. The queue is bounded: a span that finds
 * it full is dropped and counted, as is every span of an export that failed or timed out.
 * Nothing here blocks the caller of `onEnd`.
 */
export class BoundedBatchProcessor implements SpanProcessor {
  private queue: ReadableSpan[] = [];
  private inFlight: Promise<void> | null = null;
  private soon: NodeJS.Immediate | null = null;
  private readonly timer: NodeJS.Timeout;
  private closed = false;
  exported = 0;
  droppedQueueFull = 0;
  droppedExportFailed = 0;
  private readonly exporter: SpanExporter;
  private readonly opts: { maxQueue: number; maxBatch: number; timeoutMs: number };

  constructor(
    exporter: SpanExporter,
    opts: { maxQueue: number; maxBatch: number; delayMs: number; timeoutMs: number },
  ) {
    this.exporter = exporter;
    this.opts = opts;
    this.timer = setInterval(() => void this.exportSome(), opts.delayMs); // never rejects
    this.timer.unref();
  }

  get queued(): number {
    return this.queue.length;
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.closed) return;
    if (this.queue.length >= this.opts.maxQueue) {
      this.droppedQueueFull++;
      return;
    }
    this.queue.push(span);
    // A full batch goes out soon, never here: the exporter encodes the whole batch
    // synchronously, and `onEnd` runs inside whatever ended the span (a turn, a commit).
    if (this.queue.length >= this.opts.maxBatch && !this.soon) {
      this.soon = setImmediate(() => {
        this.soon = null;
        void this.exportSome();
      });
    }
  }

  private exportSome(): Promise<void> {
    if (this.inFlight) return this.inFlight;
    if (this.queue.length === 0) return Promise.resolve();
    const batch = this.queue.splice(0, this.opts.maxBatch);
    let resolve!: () => void;
    const inFlight = new Promise<void>((r) => (resolve = r));
    // Set before the exporter runs: an exporter that answers synchronously clears it again.
    this.inFlight = inFlight;
    let settled = false;
    const finish = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(guard);
      if (ok) this.exported += batch.length;
      else this.droppedExportFailed += batch.length;
      if (this.inFlight === inFlight) this.inFlight = null;
      resolve();
    };
    // The exporter has its own timeout; this one only guards against a callback never coming.
    const guard = setTimeout(() => finish(false), this.opts.timeoutMs + 1000);
    guard.unref();
    try {
      this.exporter.export(batch, (r) => finish(r.code === 0));
    } catch {
      finish(false);
    }
    return inFlight;
  }

  /** Export everything queued, giving up at `deadline` (epoch ms). */
  async drain(deadline: number): Promise<void> {
    while ((this.queue.length > 0 || this.inFlight) && Date.now() < deadline) {
      const step = this.exportSome();
      let t: NodeJS.Timeout | undefined;
      await Promise.race([
        step,
        new Promise<void>((r) => {
          t = setTimeout(r, Math.max(0, deadline - Date.now()));
          t.unref();
        }),
      ]);
      clearTimeout(t);
    }
  }

  forceFlush(): Promise<void> {
    return this.drain(Date.now() + this.opts.timeoutMs);
  }

  async shutdown(): Promise<void> {
    if (this.closed) return;
    await this.drain(Date.now() + Math.min(this.opts.timeoutMs, 3000));
    this.closed = true;
    clearInterval(this.timer);
    if (this.soon) clearImmediate(this.soon);
    this.soon = null;
    this.droppedExportFailed += this.queue.length;
    this.queue = [];
    await Promise.race([
      this.exporter.shutdown().catch(() => {}),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ]);
  }
}

type LinkRecord = { tp: string; kind: string; trusted?: boolean };

type ToolCall = { call_id: string; tool_name: string; arguments_preview: string };

type TurnState = {
  agentId: string;
  runId: string;
  messageId: string;
  span: Span;
  ctx: Context;
  tool: { callId: string; span: Span; ctx: SpanContext } | null;
  pending: ToolCall[];
  hookStartMs: number | null;
  compacted: Extract<CatalogEvent, { type: "context_compacted" }>["payload"] | null;
  costUsd: number;
  unpriced: boolean;
};

class Recorder implements TraceRecorder {
  private readonly tracer: Tracer;
  private readonly provider: TracerProvider;
  private readonly processor: BoundedBatchProcessor;
  private readonly links: TraceLinksRepo;
  private readonly byAgent = new Map<string, TurnState>();
  private readonly bySignal = new WeakMap<AbortSignal, TurnState>();
  private readonly deps: RecorderDeps;
  private readonly settings: TraceSettings;
  private readonly request: () => IncomingTrace | undefined;

  constructor(
    deps: RecorderDeps,
    request: () => IncomingTrace | undefined,
    exporter?: SpanExporter,
  ) {
    this.deps = deps;
    this.request = request;
    const version = holonVersion();
    this.settings = deps.settings;
    const s = deps.settings;
    this.processor = new BoundedBatchProcessor(
      exporter ??
        new OTLPTraceExporter({
          url: s.endpoint,
          headers: s.headers,
          timeoutMillis: s.timeoutMs,
          concurrencyLimit: 1,
        }),
      {
        maxQueue: s.maxQueueSpans,
        maxBatch: s.maxBatchSpans,
        delayMs: s.scheduledDelayMs,
        timeoutMs: s.timeoutMs,
      },
    );
    this.provider = new TracerProvider({
      resource: resourceFromAttributes({
        ...s.resourceAttributes,
        "service.name": s.serviceName,
        "service.version": version,
      }),
      spanProcessors: [this.processor],
      spanLimits: { attributeValueLengthLimit: CONTENT_MAX_CHARS + 64, linkCountLimit: 128 },
    });
    this.tracer = this.provider.getTracer("holon", version);
    // Old rows are removed by retention (`retention.trace_links`), not here.
    this.links = new TraceLinksRepo(deps.store.db);
  }

  // -------------------------------------------------------------------------------------
  // Stored contexts

  private remember(key: string, ctx: SpanContext, kind: string, trusted?: boolean): void {
    const rec: LinkRecord = { tp: traceparentOf(ctx), kind };
    if (trusted !== undefined) rec.trusted = trusted;
    try {
      this.links.put(key, JSON.stringify(rec), Date.now());
    } catch {
      // a full disk loses a link, never a turn
    }
  }

  private recall(key: string): (LinkRecord & { ctx: SpanContext }) | undefined {
    try {
      const raw = this.links.get(key);
      if (!raw) return undefined;
      const rec = JSON.parse(raw) as LinkRecord;
      const ctx = parseTraceparent(rec.tp);
      return ctx ? { ...rec, ctx } : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * What caused work made now: the HTTP request that asked for it when it carried a trace
   * context (an operator's timer), else the running tool call, else the running turn.
   */
  private causeOf(agentId: string): SpanContext | undefined {
    const incoming = this.request();
    const remote = incoming ? parseTraceparent(incoming.traceparent) : undefined;
    if (remote) return remote;
    const st = this.byAgent.get(agentId);
    if (!st) return undefined;
    return st.tool?.ctx ?? st.span.spanContext();
  }

  admitted(messageId: string, admission: string | undefined, incoming: IncomingTrace): void {
    if (incoming.claimed) return;
    incoming.claimed = true;
    const ctx = parseTraceparent(incoming.traceparent);
    if (!ctx) return;
    this.remember(`msg:${messageId}`, ctx, "ingress", TRUSTED_ADMISSIONS.has(admission ?? ""));
  }

  /** The links of one consumed message: the context it came with and what caused it. */
  private linksOf(m: MessageEnvelope, skipRemote: boolean, agentFirstTurn: boolean): Link[] {
    const out: Link[] = [];
    const add = (rec: (LinkRecord & { ctx: SpanContext }) | undefined, kind?: string) => {
      if (!rec) return;
      out.push({
        context: rec.ctx,
        attributes: {
          "holon.link.kind": kind ?? rec.kind,
          "holon.link.trusted": rec.trusted ?? true,
          "holon.message.id": m.id,
        },
      });
    };
    if (!skipRemote) add(this.recall(`msg:${m.id}`));
    switch (m.origin.kind) {
      case "task":
        add(this.recall(`task:${m.origin.task_id}`));
        break;
      case "timer":
        add(this.recall(`timer:${m.origin.timer_id}`), "timer");
        break;
      case "callback":
        add(this.recall(`trigger:${m.origin.descriptor_id}`), "callback");
        break;
      default:
        break;
    }
    if (agentFirstTurn) add(this.recall(`agent:${m.agent_id}`), "spawn");
    return out;
  }

  // -------------------------------------------------------------------------------------
  // Turns

  beginTurn(req: TurnRequest): void {
    try {
      this.startTurn(req);
    } catch {
      // tracing never fails a turn
    }
  }

  private startTurn(req: TurnRequest): void {
    const { agent, message } = req;
    const remote = this.recall(`msg:${message.id}`);
    const parent = remote?.trusted ? trace.setSpanContext(ROOT_CONTEXT, remote.ctx) : ROOT_CONTEXT;
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.id": agent.agent_id,
      "gen_ai.agent.name": agent.agent_id,
      "gen_ai.conversation.id": agent.agent_id,
      "holon.run.id": req.run_id,
      "holon.message.id": message.id,
      "holon.message.kind": message.kind,
      "holon.trigger.kind": message.trigger_kind,
      "holon.trigger.authority": message.authority_class,
      "holon.trigger.trust": message.trust,
      "holon.agent.visibility": agent.visibility,
    };
    if (message.admission_context)
      attributes["holon.trigger.admission"] = message.admission_context;
    if (message.delivery_surface) attributes["holon.trigger.surface"] = message.delivery_surface;
    const item = message.work_item_id ?? agent.current_work_item_id;
    if (item) attributes["holon.work_item.id"] = item;
    if (agent.lineage_parent_agent_id)
      attributes["holon.agent.parent_id"] = agent.lineage_parent_agent_id;
    const span = this.tracer.startSpan(
      `invoke_agent ${agent.agent_id}`,
      {
        kind: SpanKind.INTERNAL,
        attributes,
        links: this.linksOf(
          message,
          remote?.trusted === true,
          Boolean(agent.lineage_parent_agent_id) && agent.total_message_count === 0,
        ),
      },
      parent,
    );
    const ctx = trace.setSpan(ROOT_CONTEXT, span);
    const st: TurnState = {
      agentId: agent.agent_id,
      runId: req.run_id,
      messageId: message.id,
      span,
      ctx,
      tool: null,
      pending: [],
      hookStartMs: null,
      compacted: null,
      costUsd: 0,
      unpriced: false,
    };
    this.byAgent.set(agent.agent_id, st);
    this.bySignal.set(req.signal, st);
    this.admission(st, message);
  }

  /** A consumed message's wait, from its admission to the turn that took it. */
  private admission(st: TurnState, m: QueuedMessage | MessageEnvelope): void {
    const now = Date.now();
    const at = Date.parse(m.created_at);
    const start = Number.isFinite(at) && at <= now && now - at < 7 * 24 * 3600e3 ? at : now;
    const a: Attributes = {
      "holon.message.id": m.id,
      "holon.message.kind": m.kind,
      "holon.message.priority": m.priority,
      "holon.trigger.kind": m.trigger_kind,
      "holon.trigger.trust": m.trust,
      "holon.trigger.authority": m.authority_class,
      "holon.queue.wait_ms": now - start,
    };
    if (m.admission_context) a["holon.trigger.admission"] = m.admission_context;
    if (m.delivery_surface) a["holon.trigger.surface"] = m.delivery_surface;
    this.tracer
      .startSpan(`admission ${m.kind}`, { startTime: start, attributes: a }, st.ctx)
      .end(now);
  }

  endTurn(req: TurnRequest, outcome: TurnOutcome | undefined, error: unknown): void {
    const st = this.bySignal.get(req.signal);
    if (!st) return;
    try {
      this.endTool(st, "the turn ended before the call finished");
      const span = st.span;
      if (outcome) {
        span.setAttribute("holon.turn.outcome", outcome.kind);
        if (outcome.kind === "failed") {
          span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.summary.slice(0, 500) });
          span.setAttribute("error.type", "turn_failed");
        }
      } else {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(error).slice(0, 500) });
        span.setAttribute("error.type", error instanceof Error ? error.name : "error");
      }
      if (!st.unpriced) span.setAttribute("holon.cost.usd", st.costUsd);
      span.end();
    } finally {
      if (this.byAgent.get(st.agentId) === st) this.byAgent.delete(st.agentId);
    }
  }

  // -------------------------------------------------------------------------------------
  // Provider calls

  chat(req: ChatRequest, result: ChatResult, startMs: number, endMs: number): void {
    const st = this.bySignal.get(req.signal);
    if (!st) return;
    try {
      this.chatSpans(st, req, result, startMs, endMs);
    } catch {
      // never fails the call
    }
  }

  private chatSpans(
    st: TurnState,
    req: ChatRequest,
    result: ChatResult,
    startMs: number,
    endMs: number,
  ): void {
    const attempts = result.timeline.attempts.filter(
      (a) => a.disposition !== "skipped_unavailable" && a.disposition !== "unsupported_transport",
    );
    const winning = result.ok ? attempts.findLast((a) => a.outcome === "succeeded") : undefined;
    const list: (ProviderAttemptRecord | null)[] = attempts.length ? attempts : [null];
    for (const a of list) {
      const modelRef =
        a?.model_ref ??
        (result.ok ? result.model_ref : (req.candidates[0]?.model_ref ?? "unknown"));
      const [provider, model] = splitModelRef(modelRef);
      const time = (iso: string | undefined, fallback: number) => {
        const t = iso ? Date.parse(iso) : NaN;
        return Number.isFinite(t) && t >= startMs - 1000 && t <= endMs + 1000 ? t : fallback;
      };
      const start = time(a?.started_at, startMs);
      const end = Math.max(start, time(a?.completed_at, endMs));
      const attrs: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": a?.provider ?? provider,
        "gen_ai.request.model": model,
        "holon.model_ref": modelRef,
        "holon.provider.attempt": a?.attempt ?? 1,
        "holon.provider.fallback": a?.candidate_index ?? 0,
      };
      if (a?.transport) attrs["holon.provider.transport"] = a.transport;
      if (req.request.max_output_tokens)
        attrs["gen_ai.request.max_tokens"] = req.request.max_output_tokens;
      const isWinner = result.ok && (a === winning || (a === null && !winning));
      const usage =
        a?.token_usage ?? (isWinner && result.ok ? result.response.token_usage : undefined);
      Object.assign(attrs, usageAttributes(usage));
      const cost = usage ? this.deps.price(modelRef, usage) : null;
      if (cost !== null) {
        attrs["holon.cost.usd"] = cost;
        st.costUsd += cost;
      } else if (usage) st.unpriced = true;
      const span = this.tracer.startSpan(
        `chat ${model}`,
        { kind: SpanKind.CLIENT, startTime: start, attributes: attrs },
        st.ctx,
      );
      if (isWinner && result.ok) {
        const r = result.response;
        const finish = finishReason(r.stop_reason);
        span.setAttributes({
          "gen_ai.response.model": r.model,
          "gen_ai.response.finish_reasons": [finish],
        });
        if (r.response_id) span.setAttribute("gen_ai.response.id", r.response_id);
        if (this.settings.captureContent) {
          span.setAttributes({
            "gen_ai.system_instructions": clip(
              JSON.stringify([{ type: "text", content: systemText(req.request.frame) }]),
            ),
            "gen_ai.input.messages": clip(JSON.stringify(inputMessages(req.request.conversation))),
            "gen_ai.output.messages": clip(JSON.stringify(outputMessages(r.blocks, finish))),
          });
        }
      } else {
        const kind = a?.failure_kind ?? (result.ok ? a?.outcome : result.failure.kind) ?? "error";
        span.setAttribute("error.type", kind);
        if (a?.status !== undefined) span.setAttribute("http.response.status_code", a.status);
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: (a?.summary ?? (result.ok ? "" : result.failure.summary)).slice(0, 500),
        });
      }
      span.end(end);
    }
  }

  hookStart(signal: AbortSignal): void {
    const st = this.bySignal.get(signal);
    if (st) {
      st.hookStartMs = Date.now();
      st.compacted = null;
    }
  }

  hookEnd(signal: AbortSignal): void {
    const st = this.bySignal.get(signal);
    if (!st || st.hookStartMs === null) return;
    const c = st.compacted;
    if (c) {
      const attrs: Attributes = {
        "holon.compaction.strategy": c.strategy,
        "holon.compaction.round": c.round,
        "holon.compaction.compacted_rounds": c.compacted_rounds,
        "holon.compaction.before_tokens": c.before_tokens,
        "holon.compaction.after_tokens": c.after_tokens,
        "holon.compaction.budget_tokens": c.budget_tokens,
      };
      this.tracer
        .startSpan("compact_context", { startTime: st.hookStartMs, attributes: attrs }, st.ctx)
        .end();
    }
    st.hookStartMs = null;
    st.compacted = null;
  }

  // -------------------------------------------------------------------------------------
  // Tools and the work they leave behind, from committed events

  private startNextTool(st: TurnState): void {
    const next = st.pending.shift();
    if (!next) return;
    const attrs: Attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": next.tool_name,
      "gen_ai.tool.call.id": next.call_id,
      "gen_ai.tool.type": "function",
    };
    if (this.settings.captureContent)
      attrs["gen_ai.tool.call.arguments"] = clip(next.arguments_preview);
    const span = this.tracer.startSpan(
      `execute_tool ${next.tool_name}`,
      { kind: SpanKind.INTERNAL, attributes: attrs },
      st.ctx,
    );
    st.tool = { callId: next.call_id, span, ctx: span.spanContext() };
  }

  private endTool(st: TurnState, notRun: string): void {
    if (st.tool) {
      st.tool.span.setStatus({ code: SpanStatusCode.ERROR, message: notRun });
      st.tool.span.setAttribute("error.type", "not_finished");
      st.tool.span.end();
      st.tool = null;
    }
    st.pending = [];
  }

  async onEvents(events: CatalogEvent[]): Promise<void> {
    for (const e of events) {
      try {
        await this.onEvent(e);
      } catch {
        // one odd event never stops the others
      }
    }
  }

  private turnOf(agentId: string, runId?: string): TurnState | undefined {
    const st = this.byAgent.get(agentId);
    return st && (runId === undefined || st.runId === runId) ? st : undefined;
  }

  private async onEvent(e: CatalogEvent): Promise<void> {
    switch (e.type) {
      case "message_admitted": {
        // Only a message a request itself admitted takes its context: a runtime-owned one
        // (a timer armed during some request, a task result) never does.
        const admission = e.provenance.admission_context;
        const incoming = admission === "runtime_owned" ? undefined : this.request();
        if (incoming) this.admitted(e.payload.message_id, admission, incoming);
        return;
      }
      case "assistant_round_recorded": {
        const st = this.turnOf(e.agent_id, e.payload.run_id);
        if (!st) return;
        st.pending =
          e.payload.tool_calls ??
          e.payload.tool_requests.map((name, i) => ({
            call_id: `${e.payload.round}:${i}`,
            tool_name: name,
            arguments_preview: "",
          }));
        if (!st.tool) this.startNextTool(st);
        return;
      }
      case "tool_executed":
      case "tool_execution_failed": {
        const st = this.turnOf(e.agent_id, e.payload.run_id);
        if (!st?.tool) return;
        const { span } = st.tool;
        span.setAttribute("holon.tool.status", e.payload.status);
        span.setAttribute("holon.tool.duration_ms", e.payload.duration_ms);
        if (e.payload.status === "error") {
          span.setAttribute("error.type", e.payload.tool_error?.kind ?? "tool_error");
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: e.payload.summary_text.slice(0, 500),
          });
        }
        if (this.settings.captureContent)
          span.setAttribute("gen_ai.tool.call.result", clip(JSON.stringify(e.payload.envelope)));
        span.end();
        st.tool = null;
        this.startNextTool(st);
        return;
      }
      case "task_created": {
        const cause = this.causeOf(e.agent_id);
        const t = e.payload.task;
        if (cause)
          this.remember(
            `task:${t.task_id}`,
            cause,
            t.kind === "child_agent_task" ? "child_result" : "task_result",
          );
        return;
      }
      case "agent_spawned": {
        const cause = this.causeOf(e.agent_id);
        if (!cause) return;
        this.remember(`agent:${e.payload.child_agent_id}`, cause, "spawn");
        if (e.payload.supervision_task_id)
          this.remember(`task:${e.payload.supervision_task_id}`, cause, "child_result");
        return;
      }
      case "timer_created": {
        const cause = this.causeOf(e.agent_id);
        if (cause) this.remember(`timer:${e.payload.timer.timer_id}`, cause, "timer");
        return;
      }
      case "external_trigger_provisioned": {
        const cause = this.causeOf(e.agent_id);
        if (cause) this.remember(`trigger:${e.payload.external_trigger_id}`, cause, "callback");
        return;
      }
      case "operator_interjection_admitted": {
        const st = this.byAgent.get(e.agent_id);
        if (!st || st.messageId !== e.payload.into_message_id) return;
        const m = await this.deps.store.messages.get(e.payload.message_id);
        if (!m) return;
        for (const l of this.linksOf(m, false, false)) st.span.addLink(l);
        this.admission(st, m);
        return;
      }
      case "work_item_bound": {
        const st = this.turnOf(e.agent_id, e.payload.run_id);
        st?.span.setAttribute("holon.work_item.id", e.payload.work_item_id);
        return;
      }
      case "context_compacted": {
        const st = this.turnOf(e.agent_id, e.payload.run_id);
        if (st) st.compacted = e.payload;
        return;
      }
      case "turn_terminal": {
        const st = this.turnOf(e.agent_id, e.payload.run_id);
        if (!st) return;
        st.span.setAttributes({
          ...usageAttributes(e.payload.token_usage),
          "holon.turn.rounds": e.payload.model_rounds,
          "holon.turn.kind": e.payload.kind,
        });
        if (e.payload.reason) st.span.setAttribute("holon.turn.reason", e.payload.reason);
        return;
      }
      case "brief_created": {
        if (!this.settings.captureContent) return;
        const st = this.byAgent.get(e.agent_id);
        const b = e.payload.brief;
        if (st && b.related_message_id === st.messageId) {
          st.span.setAttribute("holon.brief.kind", b.kind);
          st.span.setAttribute("holon.brief.text", clip(b.text));
        }
        return;
      }
      default:
        return;
    }
  }

  stats(): SpanStats {
    return {
      exported: this.processor.exported,
      dropped_queue_full: this.processor.droppedQueueFull,
      dropped_export_failed: this.processor.droppedExportFailed,
      queued: this.processor.queued,
    };
  }

  flush(): Promise<void> {
    return this.processor.forceFlush();
  }

  async shutdown(): Promise<void> {
    for (const st of this.byAgent.values()) {
      this.endTool(st, "the host shut down");
      st.span.setAttribute("holon.turn.outcome", "host_shutdown");
      st.span.end();
    }
    this.byAgent.clear();
    await this.processor.shutdown();
  }
}

function holonVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}

/** Builds the recorder (tracing.ts calls this after loading this module). */
export function createRecorder(
  deps: RecorderDeps,
  request: () => IncomingTrace | undefined,
  exporter?: SpanExporter,
): TraceRecorder {
  return new Recorder(deps, request, exporter);
}
