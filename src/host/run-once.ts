// `holon run`: one prompt through one agent, waited on until its turn settles, summarised
// as a RunOnceResponse. Shared by the in-process path and the running host's /control/run.
import { isAbsolute, resolve } from "node:path";
import { existsSync, statSync } from "node:fs";
import type { CatalogEvent } from "../domain/events.ts";
import {
  parseTranscriptEntry,
  type TranscriptEntry,
  type TranscriptEntryKind,
} from "../domain/transcript.ts";
import { assertNever, HolonError } from "../domain/errors.ts";
import {
  addTokenUsage,
  type ProviderAttemptTimeline,
  type TokenUsage,
} from "../domain/provider.ts";
import type { TrustLevel } from "../domain/message.ts";
import { isRunAgent } from "../domain/agent.ts";
import { transition } from "../agent/status.ts";
import { checkLimits, hasLimits, type BudgetLimits } from "../domain/budget.ts";
import { executionBinding, isInside } from "../workspace/roots.ts";
import type { RuntimeHost } from "./host.ts";

export type RunOnceOptions = {
  text: string;
  agent_id?: string | undefined;
  create_agent?: boolean | undefined;
  workspace_root?: string | undefined;
  cwd?: string | undefined;
  max_turns?: number | undefined;
  /** The run's own budget; when it runs out the run fails (`failure_artifact.kind` budget_exhausted). */
  budget?: BudgetLimits | undefined;
  trust?: TrustLevel | undefined;
  /** Keep the temporary agent's loop after the run (its background work is then processed). */
  keep?: boolean | undefined;
  /** Continue a temporary agent an earlier run created (its id, `run-…`). */
  resume?: string | undefined;
};

/** A task the run started that was still running when the run reported. */
export type RunTaskStillRunning = { task_id: string; status: string; summary: string | null };

export type RunOnceResponse = {
  ok: boolean;
  outcome: "completed" | "failed" | "aborted" | "interrupted";
  agent_id: string;
  message_id: string;
  run_id: string | null;
  final_text: string;
  raw_final_text: string;
  token_usage: TokenUsage | null;
  provider_attempt_timeline: ProviderAttemptTimeline | null;
  failure_artifact?: Record<string, unknown>;
  turn_count: number;
  duration_ms: number;
  /** True when the run used its own temporary agent (created now, or resumed). */
  temporary_agent: boolean;
  /** Whether that agent's loop is kept after the run (`--keep`, or tasks still running). */
  kept: boolean;
  /** Tasks the run started that had not finished when it reported. */
  tasks_still_running: RunTaskStillRunning[];
};

/** Progress as it happens: what the agent is doing now. */
export type RunProgress = { phase: string; detail?: string };

/**
 * A workspace root from a caller. It must be absolute: a relative path means the caller's
 * working directory, which only the caller knows (the CLI resolves it before sending). It
 * must exist and be a directory.
 */
export function checkWorkspaceRoot(path: string, flag = "workspace_root"): string {
  if (!isAbsolute(path)) {
    throw new HolonError("invalid_request", `${flag} ${path} is not an absolute path`, {
      hint: "resolve it against your working directory first (the CLI does)",
    });
  }
  return checkDir(path, flag);
}

function checkDir(path: string, flag: string): string {
  const abs = resolve(path);
  let ok = false;
  try {
    ok = statSync(abs).isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new HolonError(
      "invalid_request",
      existsSync(abs) ? `${flag} ${abs} is not a directory` : `${flag} ${abs} does not exist`,
    );
  }
  return abs;
}

/**
 * Run one prompt to its settled turn. `signal` is the caller giving up (Ctrl-C, or the HTTP
 * client going away): the turn is aborted, which stops the commands it is running, and any
 * background task the run started is stopped too; the response then says `aborted`.
 */
export async function runOnce(
  host: RuntimeHost,
  opts: RunOnceOptions,
  onProgress: (p: RunProgress) => void = () => {},
  signal?: AbortSignal,
  onEvent?: (e: CatalogEvent) => void,
): Promise<RunOnceResponse> {
  if (!opts.text.trim()) throw new HolonError("invalid_request", "the prompt is empty");
  const runBudget = opts.budget === undefined ? undefined : checkLimits(opts.budget, "run budget");
  // A dollar budget needs priced models: refused before anything is created.
  if (runBudget) {
    const named = await host.store.agents.get(opts.resume ?? opts.agent_id ?? "");
    host.services.budgets.checkPriced(named ?? {}, runBudget);
  }
  const workspaceRoot = opts.workspace_root
    ? checkWorkspaceRoot(opts.workspace_root, "--workspace-root")
    : undefined;
  let agentId: string;
  let temporary = false;
  if (opts.resume) {
    if (opts.agent_id) {
      throw new HolonError("invalid_request", "give --agent or --resume, not both");
    }
    const existing = await host.store.agents.get(opts.resume);
    if (!existing || !isRunAgent(existing) || existing.archived_at) {
      throw new HolonError("unknown_agent", `no run agent named '${opts.resume}'`, {
        status: 404,
        hint: "pass the agent id an earlier `holon run` printed (run-…)",
      });
    }
    agentId = opts.resume;
    temporary = true;
    if (workspaceRoot) await host.agents.setWorkspace(agentId, workspaceRoot);
    // A finished run left its agent stopped; resuming is the operator starting it again.
    if (existing.status === "stopped")
      await transition(host.store, agentId, "awake_idle", "run_resumed");
  } else if (opts.agent_id) {
    agentId = opts.agent_id;
    const existing = await host.store.agents.get(agentId);
    if (!existing) {
      if (!opts.create_agent) {
        throw new HolonError("unknown_agent", `no agent named '${agentId}'`, {
          status: 404,
          hint: `pass --create-agent to create it, or: holon agent create ${agentId}`,
        });
      }
      await host.agents.create(agentId, workspaceRoot ? { workspace_root: workspaceRoot } : {});
    } else if (existing.visibility !== "public") {
      throw new HolonError("unknown_agent", `no agent named '${agentId}'`, { status: 404 });
    } else if (workspaceRoot) {
      await host.agents.setWorkspace(agentId, workspaceRoot);
    }
  } else {
    temporary = true;
    agentId = host.store.ids.next("run").replace(/_/g, "-");
    await host.agents.create(agentId, {
      visibility: "private",
      workspace_root: workspaceRoot ?? checkDir(process.cwd(), "the current directory"),
    });
  }
  // A held agent runs no turn until the hold lifts, and a run never waits for that: it
  // fails at once, as a budget stop inside the run would (exit code 3).
  const held = (await host.store.agents.get(agentId))?.budget_hold;
  if (held) {
    return {
      ok: false,
      outcome: "failed",
      agent_id: agentId,
      message_id: "",
      run_id: null,
      final_text: "",
      raw_final_text: "",
      token_usage: null,
      provider_attempt_timeline: null,
      failure_artifact: {
        category: "runtime",
        kind: "budget_exhausted",
        summary: `agent '${agentId}' is held: ${held.summary}`,
        budget_hold: held,
      },
      turn_count: 0,
      duration_ms: 0,
      temporary_agent: temporary,
      kept: false,
      tasks_still_running: [],
    };
  }
  await host.services.loops.start(agentId);
  if (opts.cwd) {
    const root = executionBinding(await host.agents.get(agentId)).execution_root;
    const cwd = resolve(root, opts.cwd);
    checkDir(cwd, "--cwd");
    if (!isInside(root, cwd)) {
      throw new HolonError(
        "execution_root_violation",
        `--cwd ${cwd} is outside the workspace ${root}`,
      );
    }
    await host.agents.setCwd(agentId, cwd);
  }

  const started = Date.now();
  const events: CatalogEvent[] = [];
  let messageId = "";
  let settle!: () => void;
  const settled = new Promise<void>((r) => (settle = r));
  // Interrupted: abort the run as soon as there is one (the message may still be queued).
  let interrupted = false;
  const abortRun = () => {
    if (!interrupted || !messageId) return;
    const rt = host.services.loops.get(agentId);
    if (rt?.currentRun?.message_id !== messageId || rt.currentRun.aborting) return;
    try {
      rt.abortCurrentRun("operator_aborted", { stopAfter: false });
    } catch {
      // the run ended meanwhile
    }
  };
  const onSignal = () => {
    interrupted = true;
    onProgress({ phase: "aborting", detail: "aborting the run and stopping its commands" });
    abortRun();
  };
  const unlisten = host.store.onEvents((batch) => {
    for (const e of batch) {
      if (e.agent_id !== agentId) continue;
      events.push(e);
      onEvent?.(e);
      reportProgress(e, onProgress);
      if (e.type === "message_processed" && e.payload.message_id === messageId) settle();
    }
    abortRun();
  });
  if (signal?.aborted) interrupted = true;
  else signal?.addEventListener("abort", onSignal, { once: true });
  try {
    const metadata: Record<string, unknown> = {};
    if (opts.max_turns !== undefined) metadata.max_turns = opts.max_turns;
    if (hasLimits(runBudget)) metadata.run_budget = runBudget;
    const envelope = await host.ingress.admit({
      agent_id: agentId,
      kind: "operator_prompt",
      origin: { kind: "operator" },
      body: { type: "text", text: opts.text },
      surface: "run_once",
      admission: "local_process",
      trust: opts.trust,
      metadata,
    });
    messageId = envelope.id;
    onProgress({ phase: "queued" });
    // The message may already have settled before the listener saw it (not possible with a
    // synchronous store, but cheap to guard).
    if (
      (await host.store.messages.get(messageId))?.status !== "queued" &&
      (await host.store.messages.get(messageId))?.status !== "processing"
    )
      settle();
    abortRun();
    await settled;
    // Background tasks this run started belong to it: they end with it.
    if (interrupted) {
      const started = (await host.store.tasks.activeForAgent(agentId)).filter(
        (t) => t.parent_message_id === messageId,
      );
      await Promise.all(started.map((t) => host.tasks.stop(t.id, 500).catch(() => {})));
    }
  } finally {
    signal?.removeEventListener("abort", onSignal);
    unlisten();
  }
  // Commands the run promoted to tasks: listed, and their agent kept so their results are
  // processed (and `holon run --resume` can pick them up) instead of landing nowhere.
  const stillRunning: RunTaskStillRunning[] = (await host.store.tasks.activeForAgent(agentId)).map(
    (t) => ({ task_id: t.id, status: t.status, summary: t.summary ?? null }),
  );
  const kept = temporary && (Boolean(opts.keep) || stillRunning.length > 0);
  if (temporary && !kept) {
    // Nothing of the run still runs: its agent stops, and stays inspectable by id (status,
    // tail, transcript, agent get) until it is deleted; `--resume` continues it.
    await host.services.loops.retire(agentId);
    if ((await host.store.agents.get(agentId))?.status !== "stopped")
      await transition(host.store, agentId, "stopped", "run_finished");
  }
  return {
    ...(await summarize(host, agentId, messageId, events, Date.now() - started)),
    temporary_agent: temporary,
    kept,
    tasks_still_running: stillRunning,
  };
}

function reportProgress(e: CatalogEvent, onProgress: (p: RunProgress) => void): void {
  switch (e.type) {
    case "turn_context_built":
      onProgress({ phase: "model", detail: "asking the model" });
      break;
    case "assistant_round_recorded": {
      const tools = e.payload.tool_requests;
      onProgress(
        tools.length > 0
          ? { phase: "tools", detail: `running ${tools.join(", ")}` }
          : { phase: "model", detail: e.payload.text_preview },
      );
      break;
    }
    case "tool_executed":
    case "tool_execution_failed":
      onProgress({ phase: "tools", detail: `${e.payload.tool_name}: ${e.payload.summary_text}` });
      break;
    // Not progress a `holon run` caller sees.
    case "agent_created":
    case "agent_state_changed":
    case "agent_model_changed":
    case "agent_setting_changed":
    case "sandbox_enabled":
    case "sandbox_network_refused":
    case "hook_failed":
    case "agent_spawned":
    case "agent_template_applied":
    case "agent_archived":
    case "agent_deleted":
    case "workspace_attached":
    case "workspace_detached":
    case "workspace_activated":
    case "worktree_created":
    case "worktree_removed":
    case "worktree_retained":
    case "skill_activated":
    case "control_applied":
    case "wake_requested":
    case "wake_scheduled":
    case "wake_cancelled":
    case "provider_retry_scheduled":
    case "deadline_dropped":
    case "current_run_abort_requested":
    case "message_admitted":
    case "continuation_resolved":
    case "message_processing_started":
    case "message_processed":
    case "closure_decided":
    case "message_interrupted":
    case "operator_interjection_admitted":
    case "provider_round_completed":
    case "context_compacted":
    case "remote_compaction_skipped":
    case "turn_terminal":
    case "brief_created":
    case "runtime_error":
    case "prompt_cache_degraded":
    case "prompt_cache_recovered":
    case "task_created":
    case "task_status_updated":
    case "task_reattached_after_restart":
    case "runtime_service_shutdown_requested":
    case "operator_delivery_recorded":
    case "ask_opened":
    case "ask_decided":
    case "ask_expired":
    case "ask_withdrawn":
    case "ask_delivery_recorded":
    case "http_request_refused":
    case "retention_applied":
    case "storage_outage":
    case "budget_set":
    case "budget_raised":
    case "budget_exhausted":
    case "budget_hold_cleared":
    case "budget_warning":
    case "budget_reservation_returned":
    case "timer_created":
    case "timer_fired":
    case "timer_cancelled":
    case "wake_hint_received":
    case "wake_hint_converted":
    case "external_trigger_provisioned":
    case "external_trigger_revoked":
    case "external_trigger_refused":
    case "work_item_created":
    case "work_item_updated":
    case "work_item_focus_changed":
    case "work_item_completed":
    case "work_item_bound":
    case "work_item_turn_end_committed":
    case "work_item_turn_end_commit_skipped":
    case "work_recheck_due":
    case "work_activation":
      break;
    default:
      assertNever(e, "event type");
  }
}

type Processed = Extract<CatalogEvent, { type: "message_processed" }>;
const isProcessed = (e: CatalogEvent, messageId: string): e is Processed =>
  e.type === "message_processed" && e.payload.message_id === messageId;

/** The newest completion report promoted while the run was being watched. */
async function completionReport(
  host: RuntimeHost,
  events: CatalogEvent[],
): Promise<string | undefined> {
  for (const e of [...events].reverse()) {
    if (e.type !== "work_item_completed" || !e.payload.report_id) continue;
    const text = (await host.store.workItems.summary(e.payload.report_id))?.text;
    if (text) return text;
  }
  return undefined;
}

async function summarize(
  host: RuntimeHost,
  agentId: string,
  messageId: string,
  events: CatalogEvent[],
  durationMs: number,
): Promise<Omit<RunOnceResponse, "temporary_agent" | "kept" | "tasks_still_running">> {
  const processed = events.find((e) => isProcessed(e, messageId));
  const runId = processed?.payload.run_id ?? null;
  const entries = (runId ? await host.store.transcript.forRun(agentId, runId) : []).flatMap(
    (e) => parseTranscriptEntry(e) ?? [],
  );
  const ofKind = <K extends TranscriptEntryKind>(kind: K) =>
    entries.filter((e): e is Extract<TranscriptEntry, { kind: K }> => e.kind === kind);
  const terminal = ofKind("turn_terminal").at(-1);
  const rounds = ofKind("assistant_round");
  const failure = ofKind("runtime_failure").at(-1);

  let usage: TokenUsage | undefined;
  const attempts: ProviderAttemptTimeline["attempts"] = [];
  let timeline: ProviderAttemptTimeline | null = null;
  for (const r of rounds) {
    usage = addTokenUsage(usage, r.data.token_usage ?? undefined);
    const t = r.data.provider_attempt_timeline;
    if (t) {
      attempts.push(...t.attempts);
      timeline = { ...t, attempts: [...attempts] };
    }
  }
  const failureTimeline = failure?.data.provider_attempt_timeline;
  if (failureTimeline) {
    attempts.push(...failureTimeline.attempts);
    timeline = { ...failureTimeline, attempts: [...attempts] };
    usage = addTokenUsage(usage, failureTimeline.aggregated_token_usage);
  }

  const raw = terminal?.data.last_assistant_message ?? "";
  // A work item completed during the run: its report is the answer (raw_final_text keeps the
  // terminal assistant text for diagnostics).
  const report = await completionReport(host, events);
  const outcomeRaw = processed?.payload.outcome;
  const outcome: RunOnceResponse["outcome"] =
    failure || outcomeRaw === "failed"
      ? "failed"
      : outcomeRaw === "aborted"
        ? "aborted"
        : outcomeRaw === "interrupted"
          ? "interrupted"
          : "completed";
  const response: Awaited<ReturnType<typeof summarize>> = {
    ok: outcome === "completed",
    outcome,
    agent_id: agentId,
    message_id: messageId,
    run_id: runId,
    final_text: (report ?? raw).trim(),
    raw_final_text: raw,
    token_usage: usage ?? null,
    provider_attempt_timeline: timeline,
    turn_count: rounds.length,
    duration_ms: durationMs,
  };
  if (failure) {
    response.failure_artifact = failure.data.failure_artifact ?? {
      category: "runtime",
      kind: failure.data.kind ?? "runtime_failure",
      summary: failure.data.summary,
    };
  } else if (outcome === "aborted") {
    response.failure_artifact = {
      category: "runtime",
      kind: "aborted",
      summary: terminal?.data.reason ?? "aborted",
    };
  }
  return response;
}
