// One agent's runtime: the scheduler loop that takes the next message from the durable
// queue, resolves what it means against the standing closure (continuation), hands
// model-visible work to the turn executor, and turns the turn's outcome into the next
// closure and agent state, all in the transactions that record them. The loop sleeps when
// the queue is empty and wakes when its signal fires.
import type { AgentRecord, AgentStatus } from "../domain/agent.ts";
import type { ClosureDecision, TurnOutcome } from "../domain/closure.ts";
import type { EventPayload } from "../domain/events.ts";
import type { QueuedMessage } from "../domain/message.ts";
import { HolonError } from "../domain/errors.ts";
import { isBodylessWakeHint } from "../domain/waiting.ts";
import type { Store } from "../store/db.ts";
import { classifyStorageError } from "../store/health.ts";
import { provenanceOf } from "./admission.ts";
import { recordRuntimeFailure } from "./briefs.ts";
import {
  deriveClosure,
  mergePlaneFacts,
  resolveContinuation,
  type PlaneFacts,
  type Visibility,
} from "./closure.ts";
import { transition } from "./status.ts";

export type TurnRequest = {
  /** The agent as the run found it, before its start was recorded (see begin). */
  agent: AgentRecord;
  /**
   * Record the run's start (the message taken, the agent running) inside the caller's
   * transaction, so it commits with the turn's first records; returns the agent as it now
   * runs. Idempotent; an executor that never calls it gets the start committed for it.
   */
  begin(): Promise<AgentRecord>;
  /**
   * Settle the run with `outcome` inside the caller's transaction (the turn's last), when
   * nothing is left to run between the turn's end and the run's: the message's end, the
   * closure and the agent's rest commit with the terminal record. The executor then returns
   * that same outcome.
   */
  end(outcome: TurnOutcome): Promise<void>;
  message: QueuedMessage;
  run_id: string;
  signal: AbortSignal;
  /** Queued trusted `interject` operator prompts, claimed for insertion at a safe point. */
  takeInterjections(boundary: string): Promise<QueuedMessage[]>;
  /** Told about each tool call of the run once its record is durable (see RunToolCall). */
  toolDone?(call: RunToolCall): void;
};

/**
 * A tool call a run finished, as its `tool_execution` transcript entry records it. The
 * runtime keeps the run's calls in memory and hands them to the observers at the run's end,
 * so a turn-boundary hook (working memory's tool evidence) need not read the transcript back.
 */
export type RunToolCall = {
  tool_name: string;
  /** The arguments as the model sent them (JSON text). */
  arguments: string;
  /** The canonical result envelope (tools/envelope.ts). */
  envelope: unknown;
};

/** Runs one message through a turn. Implemented in src/turn; the loop only needs this. */
export interface TurnExecutor {
  run(req: TurnRequest): Promise<TurnOutcome>;
}

/**
 * The agent's sleep deadline, owned by the waiting plane (waiting/sleep.ts). `arm` and
 * `cancel` join the caller's transaction.
 */
export interface SleepDeadlines {
  pending(agentId: string): Promise<string | undefined>;
  arm(agentId: string, wakeAt: string, durationMs: number): Promise<void>;
  cancel(agentId: string, why: string): Promise<void>;
}

/**
 * How a plane takes part in an agent's runs without editing the loop: it may prepare a run
 * (bind it to a work item), contribute facts to the closure (runnable work, an operator or
 * external wait), and react to the decided closure (activate runnable work). Every hook runs
 * inside the transaction it belongs to, so what it writes commits with the run's records.
 */
export interface RunObserver {
  /** A message is about to run (inside the dequeue transaction). */
  beforeRun?(run: RunInfo): void | Promise<void>;
  /**
   * The run ended (inside the settle transaction, before the closure is derived). `tools`:
   * the run's finished tool calls, in order (empty when no turn ran).
   */
  afterRun?(
    run: RunInfo & { outcome: TurnOutcome; tools: readonly RunToolCall[] },
  ): void | Promise<void>;
  /** Facts this plane knows for the closure of this run. */
  closureFacts?(run: RunInfo & { outcome: TurnOutcome }): PlaneFacts | Promise<PlaneFacts>;
  /** The closure was decided (inside the settle transaction). */
  onClosure?(
    run: RunInfo & { outcome: TurnOutcome; closure: ClosureDecision },
  ): void | Promise<void>;
  /**
   * The queue is empty and the agent is about to rest. A plane may admit runtime-owned input
   * here (a pending wake hint becomes its SystemTick); the loop then runs it instead of
   * resting. Called inside the settle transaction after a run, and outside any transaction
   * at the loop's idle point: a plane that writes opens its own (it joins an outer one), so
   * an idle look that finds nothing to do costs no transaction.
   */
  atIdle?(agentId: string): void | Promise<void>;
}

export type RunInfo = { agent_id: string; run_id: string; message: QueuedMessage };

/**
 * The ask gate (src/asks/ satisfies it): while an agent-scope ask holds the agent, no model
 * turn runs. Messages are still admitted and kept in the queue; they run once it is lifted.
 */
export interface AgentGate {
  gatedBy(agentId: string): Promise<string | undefined>;
}

export type LoopDeps = {
  store: Store;
  executor: TurnExecutor;
  sleep: SleepDeadlines;
  /** The planes' hooks, in order (host/services.ts lists them). */
  observers?: RunObserver[];
  gate?: AgentGate;
};

type CurrentRun = {
  run_id: string;
  message_id: string;
  controller: AbortController;
  /** What the agent's status becomes when the run ends, when a control action decided it. */
  after: "stopped" | undefined;
};

export class AgentRuntime {
  readonly agentId: string;
  private readonly deps: LoopDeps;
  private closed = false;
  private wake: (() => void) | undefined;
  private kicked = false;
  /**
   * Signals received (every admission to this agent signals it, synchronously, once its row
   * is written): a run looks for interjections to claim only when one arrived since it last
   * looked (see takeInterjections).
   */
  private notices = 0;
  /** The last run's settle transaction rested the agent (see restAfterRun). */
  private restedAfterRun = false;
  private current: CurrentRun | undefined;
  private loopDone: Promise<void> | undefined;
  /** Aborted by close(): ends any wait for the store. */
  private readonly closing = new AbortController();

  constructor(deps: LoopDeps, agentId: string) {
    this.deps = deps;
    this.agentId = agentId;
  }

  private get store(): Store {
    return this.deps.store;
  }

  private get observers(): RunObserver[] {
    return this.deps.observers ?? [];
  }

  start(): void {
    if (!this.loopDone) this.loopDone = this.loop();
  }

  /** Something changed (message admitted, control applied): let the loop look again. */
  notify(): void {
    this.notices++;
    this.kicked = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  get currentRun(): { run_id: string; message_id: string; aborting: boolean } | undefined {
    return this.current
      ? {
          run_id: this.current.run_id,
          message_id: this.current.message_id,
          aborting: this.current.controller.signal.aborted,
        }
      : undefined;
  }

  /**
   * Abort the current provider/tool work. `stopAfter` makes the agent `stopped` once the
   * run has ended. Throws `no_active_run` / `stale_run_id` when there is nothing to abort.
   */
  abortCurrentRun(
    reason: string,
    opts: { runId?: string | undefined; stopAfter: boolean },
  ): string {
    const current = this.current;
    if (!current) {
      throw new HolonError("no_active_run", `agent '${this.agentId}' has no run in progress`, {
        status: 409,
      });
    }
    if (opts.runId !== undefined && opts.runId !== current.run_id) {
      throw new HolonError(
        "stale_run_id",
        `run '${opts.runId}' is not the current run (current: '${current.run_id}')`,
        { status: 409, hint: "read the current run id from status and retry" },
      );
    }
    if (opts.stopAfter) current.after = "stopped";
    current.controller.abort(new AbortRunError(reason));
    return current.run_id;
  }

  /** Graceful shutdown: abort in-flight work (recorded as interrupted) and end the loop. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    this.current?.controller.abort(new AbortRunError("runtime_shutdown"));
    this.notify();
    await this.loopDone;
  }

  private async waitForKick(): Promise<void> {
    if (this.kicked) {
      this.kicked = false;
      return;
    }
    await new Promise<void>((resolve) => (this.wake = resolve));
    this.kicked = false;
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      try {
        if (!(await this.step())) return;
      } catch (err) {
        // The loop itself must survive anything a run throws, a failing store included.
        await this.survive(err);
      }
    }
  }

  /** One look at the queue and what it holds; false when the agent is gone. */
  private async step(): Promise<boolean> {
    if (this.restedAfterRun) {
      // The run's settle transaction found nothing to run and rested the agent: the look
      // below would find the same, unless something arrived since (which kicked the loop).
      this.restedAfterRun = false;
      if (!this.kicked) {
        await this.waitForKick();
        return true;
      }
    }
    this.kicked = false;
    const agent = await this.store.agents.get(this.agentId);
    if (!agent) return false;
    if (agent.status === "paused" || agent.status === "stopped") {
      await this.waitForKick();
      return true;
    }
    // A budget hold (src/budget/gate.ts): ingress is admitted and kept, no turn runs until
    // the hold clears (raised, unfrozen, or its window turned over), which kicks the loop.
    if (agent.budget_hold) {
      await this.restIfIdle(agent);
      await this.waitForKick();
      return true;
    }
    const gate = await this.deps.gate?.gatedBy(this.agentId);
    if (gate) {
      // Held by an ask: what arrives stays queued; nothing runs until it is lifted.
      await this.restGated(agent, gate);
      await this.waitForKick();
      return true;
    }
    const next = await this.store.messages.peekNext(this.agentId);
    if (!next) {
      if (await this.admittedAtIdle()) return true;
      await this.restIfIdle(agent);
      await this.waitForKick();
      return true;
    }
    try {
      await this.runOne(next, agent);
    } catch (err) {
      if (classifyStorageError(err)) throw err; // the store, not the run: survive() waits
      await this.durably(async () => {
        await recordRuntimeFailure(this.store, {
          agent_id: this.agentId,
          message_id: next.id,
          summary: `internal runtime error: ${err instanceof Error ? err.message : String(err)}`,
        });
        await this.store.tx(async () => {
          // Queued still when the failure undid the run's start with it: never run it again.
          const status = (await this.store.messages.get(next.id))?.status;
          if (status === "processing" || status === "queued") {
            await this.store.messages.setStatus(
              next.id,
              "processed",
              this.store.clock.now().toISOString(),
            );
          }
        });
      });
    }
    return true;
  }

  /**
   * After the loop caught `err`: a store that cannot be written is waited for (the agent does
   * not spin; what it was doing is retried once writes go through), a lost store until
   * shutdown. Anything else is reported, and the loop looks again when something changes.
   */
  private async survive(err: unknown): Promise<void> {
    const fault = classifyStorageError(err);
    if (fault === "lost") {
      await new Promise<void>((resolve) => {
        if (this.closing.signal.aborted) resolve();
        this.closing.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    } else if (fault) {
      await this.store.health.whenWritableAfter(err, this.closing.signal);
    } else {
      process.emitWarning(
        `holon: agent '${this.agentId}' loop error: ${err instanceof Error ? err.message : String(err)}`,
      );
      await this.waitForKick();
    }
  }

  /**
   * Run a write that must not be lost: while the store is full or not writable it waits for
   * the store and tries again (the outcome is kept in memory meanwhile). Gives up, by
   * throwing, only on shutdown or a lost store.
   */
  private async durably<T>(fn: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        const fault = classifyStorageError(err);
        if (!fault || fault === "lost" || this.closed) throw err;
        await this.store.health.whenWritableAfter(err, this.closing.signal);
        if (this.closed) throw err;
      }
    }
  }

  /**
   * Nothing queued: rest. The status says how: `awaiting_task` when the closure waits on
   * tasks, otherwise `asleep`, with `sleeping_until` set from the armed deadline (if any).
   */
  private async restIfIdle(agent: AgentRecord, reason = "queue_empty"): Promise<void> {
    const wakeAt = await this.deps.sleep.pending(this.agentId);
    const to: AgentStatus =
      agent.closure?.waiting_reason === "awaiting_task_result" ? "awaiting_task" : "asleep";
    if (agent.status === to && agent.sleeping_until === wakeAt && !agent.current_run_id) return;
    const clear: ("current_run_id" | "sleeping_until")[] = ["current_run_id"];
    if (!wakeAt) clear.push("sleeping_until");
    await transition(this.store, this.agentId, to, reason, {
      clear,
      ...(wakeAt ? { sleeping_until: wakeAt } : {}),
    });
  }

  private async restGated(agent: AgentRecord, askId: string): Promise<void> {
    if (agent.status === "asleep" && !agent.current_run_id) return;
    await transition(this.store, this.agentId, "asleep", `awaiting_operator: ask ${askId}`, {
      clear: ["current_run_id", "sleeping_until"],
    });
  }

  /** Each plane's facts for a run's closure, in order (a synchronous answer costs no tick). */
  private async closureFacts(run: RunInfo & { outcome: TurnOutcome }): Promise<PlaneFacts[]> {
    const facts: PlaneFacts[] = [];
    for (const o of this.observers) {
      const f = o.closureFacts?.(run);
      if (f) facts.push(f instanceof Promise ? await f : f);
    }
    return facts;
  }

  /** Let the planes act at the idle point; true when that queued something to run. */
  private async admittedAtIdle(): Promise<boolean> {
    if (!this.observers.some((o) => o.atIdle)) return false;
    for (const o of this.observers) {
      // Awaited only when it is a promise: most planes' hooks are synchronous, and awaiting
      // a plain value still costs a promise and a tick, per observer, on every turn.
      const r = o.atIdle?.(this.agentId);
      if (r) await r;
    }
    return (await this.store.messages.peekNext(this.agentId)) !== undefined;
  }

  /**
   * Inside the settle transaction: when the loop would find nothing to run next (not paused,
   * held or gated, nothing queued once the planes had their idle look), the agent as it is,
   * to rest in the same commit as the run's end instead of one transaction later. The loop's
   * next look then finds it resting already; every other case is left to that look.
   */
  private async restingAfterRun(): Promise<AgentRecord | undefined> {
    const store = this.store;
    const agent = await store.agents.get(this.agentId);
    if (!agent || this.closed) return undefined;
    if (agent.status === "paused" || agent.status === "stopped" || agent.budget_hold)
      return undefined;
    if (await this.deps.gate?.gatedBy(this.agentId)) return undefined;
    if (await store.messages.peekNext(this.agentId)) return undefined;
    // What restIfIdle reads (status, closure, run id) is as read above: an idle look that
    // admitted nothing changed none of it.
    return (await this.admittedAtIdle()) ? undefined : agent;
  }

  private async visibility(message: QueuedMessage): Promise<Visibility> {
    if (isBodylessWakeHint(message)) {
      // A plain wake: the agent wakes and its closure is looked at again; the model is
      // asked only when runnable work stands (the prior closure, or a plane's work signal).
      const agent = await this.store.agents.get(this.agentId);
      const run = { agent_id: this.agentId, run_id: "", message };
      const facts = mergePlaneFacts(
        await this.closureFacts({ ...run, outcome: { kind: "liveness_only" } }),
      );
      if (agent?.closure?.outcome === "continuable" || facts.work_signal) {
        return { model_visible: true, why: "runnable_work" };
      }
      return { model_visible: false, why: "wake_hint_without_body" };
    }
    if (message.kind === "task_status") {
      return { model_visible: false, why: "task_status_is_observational" };
    }
    if (message.kind === "task_result" && message.task_id) {
      const task = await this.store.tasks.get(message.task_id);
      if (task && !task.terminal_reentry) {
        return { model_visible: false, why: "task_did_not_request_reentry" };
      }
    }
    return { model_visible: true, why: "contentful" };
  }

  /** Run `message`; `before` is the agent as the loop's look just read it. */
  private async runOne(message: QueuedMessage, before: AgentRecord): Promise<void> {
    const store = this.store;
    const runId = store.ids.next("run");
    const startedAt = store.clock.now();
    const visibility = await this.visibility(message);
    // The run's start (the continuation, the message taken, the agent running) commits with
    // the turn's first records rather than in a transaction of its own: a crash before that
    // commit leaves the message queued and nothing written, and it runs again. A turn that
    // never records anything still starts durably at the next event-loop turn (see begin).
    let started: "no" | "pending" | "yes" = "no";
    let running: AgentRecord = before;
    const begin = async (): Promise<AgentRecord> => {
      if (started !== "no") return running;
      return await store.tx(async () => {
        // a begin that waited for another transaction finds the start recorded
        if (started !== "no") return running;
        running = await this.recordStart(message, runId, startedAt, visibility);
        started = "pending";
        store.whenSettled((committed) => (started = committed ? "yes" : "no"));
        return running;
      });
    };
    const controller = new AbortController();
    this.current = { run_id: runId, message_id: message.id, controller, after: undefined };
    const tools: RunToolCall[] = [];
    let looked: number | undefined;

    let outcome: TurnOutcome;
    let settledEarly = false;
    if (!visibility.model_visible) {
      // Nothing to ask the model: the start commits with the settle below.
      outcome = { kind: "liveness_only" };
    } else {
      // An executor that records nothing before it waits (a slow tool source, a test's
      // parked executor) still shows the run started: it is committed on its own once the
      // executor's synchronous start and the promise jobs it queued have run.
      const fallback = setImmediate(() => {
        if (started === "no" && !this.closed) {
          this.durably(begin).catch(() => {
            // left to the settle, which records the start before the run's end
          });
        }
      });
      try {
        outcome = await this.deps.executor.run({
          agent: before,
          begin,
          end: async (ended) => {
            const current = this.current;
            await this.settle(message, runId, startedAt, ended, current?.after, tools, begin);
            store.whenSettled((committed) => {
              if (!committed) return;
              settledEarly = true;
              // The run is over: an abort from here on finds no run to abort.
              if (this.current === current) this.current = undefined;
            });
          },
          message,
          run_id: runId,
          signal: controller.signal,
          takeInterjections: async (boundary) => {
            // The run's first look always asks the queue; a later one only after a signal.
            if (looked === this.notices) return [];
            looked = this.notices;
            return await this.takeInterjections(message.id, boundary);
          },
          toolDone: (call) => tools.push(call),
        });
      } catch (err) {
        const summary = err instanceof Error ? err.message : String(err);
        await this.durably(
          async () =>
            await store.tx(async () => {
              await begin();
              await recordRuntimeFailure(store, {
                agent_id: this.agentId,
                run_id: runId,
                message_id: message.id,
                summary: `turn failed: ${summary}`,
              });
            }),
        );
        outcome = { kind: "failed", summary };
      } finally {
        clearImmediate(fallback);
      }
    }
    if (settledEarly) return;
    const after = this.current?.after;
    this.current = undefined;
    // Shut down before anything of the run was recorded: it stays queued, to run after start.
    if (started === "no" && this.closed && outcome.kind === "aborted") return;
    const settled = outcome;
    await this.durably(
      async () => await this.settle(message, runId, startedAt, settled, after, tools, begin),
    );
  }

  /**
   * The run's start, inside the caller's transaction: the continuation, the planes'
   * beforeRun, the message taken from the queue, and the agent running. Returns the agent as
   * it now runs.
   */
  private async recordStart(
    message: QueuedMessage,
    runId: string,
    startedAt: Date,
    visibility: Visibility,
  ): Promise<AgentRecord> {
    const store = this.store;
    const before = (await store.agents.get(this.agentId))!;
    const continuation = resolveContinuation(
      message,
      before.closure,
      visibility,
      startedAt.toISOString(),
    );
    // Operator input overrides a wait: the sleep deadline it was resting on is dropped.
    if (continuation.class === "resume_override")
      await this.deps.sleep.cancel(this.agentId, "operator_override");
    // The wake the deadline was for has arrived.
    if (
      continuation.class === "resume_expected_wait" &&
      continuation.prior_waiting_reason === "awaiting_timer"
    ) {
      await this.deps.sleep.cancel(this.agentId, "woken");
    }
    await store.agents.put({ ...before, last_continuation: continuation });
    for (const o of this.observers) {
      const r = o.beforeRun?.({ agent_id: this.agentId, run_id: runId, message });
      if (r) await r;
    }
    await store.appendEvent(this.agentId, {
      type: "continuation_resolved",
      provenance: provenanceOf(message),
      payload: { ...continuation },
    });
    await store.messages.setStatus(message.id, "processing");
    await store.appendEvent(this.agentId, {
      type: "message_processing_started",
      provenance: provenanceOf(message),
      payload: {
        message_id: message.id,
        run_id: runId,
        kind: message.kind,
        queue_wait_ms: Math.max(0, startedAt.getTime() - Date.parse(message.created_at)),
      },
    });
    return await transition(store, this.agentId, "awake_running", `processing ${message.kind}`, {
      current_run_id: runId,
      last_wake_reason: message.kind,
    });
  }

  /**
   * Record the message's end, derive the closure, arm any deadline, and rest when nothing
   * else waits to run: one transaction.
   */
  private async settle(
    message: QueuedMessage,
    runId: string,
    startedAt: Date,
    outcome: TurnOutcome,
    after: "stopped" | undefined,
    tools: readonly RunToolCall[],
    begin: () => Promise<AgentRecord>,
  ): Promise<void> {
    const store = this.store;
    const shutdown = this.closed && outcome.kind === "aborted";
    await store.tx(async () => {
      await begin();
      const now = store.clock.now();
      const status = shutdown
        ? "interrupted"
        : outcome.kind === "aborted"
          ? "aborted"
          : "processed";
      await store.messages.setStatus(message.id, status, now.toISOString());
      const payload: EventPayload<"message_processed"> = {
        message_id: message.id,
        run_id: runId,
        outcome: shutdown
          ? "interrupted"
          : outcome.kind === "aborted" || outcome.kind === "failed"
            ? outcome.kind
            : "completed",
        turn_outcome: outcome.kind,
        duration_ms: now.getTime() - startedAt.getTime(),
      };
      if (outcome.kind === "aborted") payload.reason = outcome.reason;
      await store.appendEvent(this.agentId, {
        type: "message_processed",
        provenance: provenanceOf(message),
        payload,
      });
      const before = await store.agents.get(this.agentId);
      if (!before) return;
      if (shutdown) {
        // A graceful shutdown never rewrites the agent's lifecycle or its closure.
        await store.agents.put({ ...before, total_message_count: before.total_message_count + 1 });
        return;
      }
      if (outcome.kind === "sleep_until") {
        await this.deps.sleep.arm(this.agentId, outcome.wake_at, outcome.duration_ms);
      }
      const run = { agent_id: this.agentId, run_id: runId, message, outcome };
      let decided: ClosureDecision | undefined;
      for (const o of this.observers) {
        const r = o.afterRun?.({ ...run, tools });
        if (r) await r;
      }
      // Read the record again: a plane's afterRun may have changed it.
      const current = (await store.agents.get(this.agentId))!;
      let next: AgentRecord = { ...current, total_message_count: current.total_message_count + 1 };
      if (outcome.kind !== "liveness_only" || !current.closure) {
        const closure = deriveClosure(outcome, {
          prior: current.closure,
          continuation: current.last_continuation,
          sleep_wake_at: await this.deps.sleep.pending(this.agentId),
          reentry_task_ids: (await store.tasks.activeForAgent(this.agentId))
            .filter((t) => t.terminal_reentry)
            .map((t) => t.id),
          pending_messages: await store.messages.pendingCount(this.agentId),
          ...mergePlaneFacts(await this.closureFacts(run)),
          now: now.toISOString(),
          run_id: runId,
          message_id: message.id,
        });
        next = { ...next, closure };
        decided = closure;
        await store.appendEvent(this.agentId, {
          type: "closure_decided",
          provenance: provenanceOf(message),
          payload: { ...closure, turn_outcome: outcome.kind },
        });
      }
      await store.agents.put(next);
      if (after === "stopped") {
        await transition(store, this.agentId, "stopped", "stopped after abort", {
          clear: ["current_run_id"],
        });
        return;
      }
      if (decided) {
        for (const o of this.observers) {
          const r = o.onClosure?.({ ...run, closure: decided });
          if (r) await r;
        }
      }
      // One state change for the run's end: straight to rest when nothing else waits to run
      // (running → idle → asleep in one commit showed no one the idle in between), else idle.
      const resting = await this.restingAfterRun();
      if (resting) {
        await this.restIfIdle(resting, "run finished, queue empty");
        // Only once committed: a settle that failed leaves the loop to look for itself.
        store.whenSettled((committed) => (this.restedAfterRun = committed));
      } else {
        const ended = (await store.agents.get(this.agentId))!;
        await transition(
          store,
          this.agentId,
          ended.status === "awake_running" ? "awake_idle" : ended.status,
          "run finished",
          { clear: ["current_run_id"] },
        );
      }
    });
  }

  /** Claim queued interject-priority operator prompts so the turn can insert them. */
  private async takeInterjections(
    activeMessageId: string,
    boundary: string,
  ): Promise<QueuedMessage[]> {
    const store = this.store;
    const claimable = (m: QueuedMessage) => m.trust === "trusted_operator";
    // Usually there is nothing to claim: look (through the queue's index, at the interject
    // band only) before taking the write lock; this host is the store's only writer, and
    // the transaction looks again.
    if (!(await store.messages.queuedAt(this.agentId, "interject")).some(claimable)) return [];
    return await store.tx(async () => {
      const claimed: QueuedMessage[] = [];
      for (const m of await store.messages.queuedAt(this.agentId, "interject")) {
        if (!claimable(m)) continue;
        await store.messages.setStatus(m.id, "interjected", store.clock.now().toISOString());
        await store.appendEvent(this.agentId, {
          type: "operator_interjection_admitted",
          provenance: provenanceOf(m),
          payload: { message_id: m.id, into_message_id: activeMessageId, boundary },
        });
        claimed.push(m);
      }
      return claimed;
    });
  }
}

export class AbortRunError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`run aborted: ${reason}`);
    this.reason = reason;
  }
}
