// One agent's runtime: the scheduler loop that takes the next message from the durable
// queue, hands it to the turn executor, and records the outcome. The loop sleeps when
// the queue is empty and wakes when something is admitted.
import type { AgentRecord } from "../domain/agent.ts";
import type { QueuedMessage } from "../domain/message.ts";
import { HolonError } from "../domain/errors.ts";
import type { Store } from "../store/db.ts";
import { provenanceOf } from "./admission.ts";
import { recordRuntimeFailure } from "./briefs.ts";
import { transition } from "./status.ts";

export type TurnRequest = {
  agent: AgentRecord;
  message: QueuedMessage;
  run_id: string;
  signal: AbortSignal;
  /** Queued trusted `interject` operator prompts, claimed for insertion at a safe point. */
  takeInterjections(boundary: string): QueuedMessage[];
};

export type TurnResult =
  | { outcome: "completed" }
  | { outcome: "aborted"; reason: string }
  | { outcome: "failed"; summary: string };

/** Runs one message through a turn. Implemented in src/turn; the loop only needs this. */
export interface TurnExecutor {
  run(req: TurnRequest): Promise<TurnResult>;
}

type CurrentRun = {
  run_id: string;
  message_id: string;
  controller: AbortController;
  /** What the agent's status becomes when the run ends, when a control action decided it. */
  after: "stopped" | undefined;
};

export class AgentRuntime {
  readonly agentId: string;
  private readonly store: Store;
  private readonly executor: TurnExecutor;
  private closed = false;
  private wake: (() => void) | undefined;
  private kicked = false;
  private current: CurrentRun | undefined;
  private loopDone: Promise<void> | undefined;

  constructor(store: Store, agentId: string, executor: TurnExecutor) {
    this.store = store;
    this.agentId = agentId;
    this.executor = executor;
  }

  start(): void {
    if (!this.loopDone) this.loopDone = this.loop();
  }

  /** Something changed (message admitted, control applied): let the loop look again. */
  notify(): void {
    this.kicked = true;
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  get currentRun(): { run_id: string; message_id: string } | undefined {
    return this.current
      ? { run_id: this.current.run_id, message_id: this.current.message_id }
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
      this.kicked = false;
      const agent = this.store.agents.get(this.agentId);
      if (!agent) return;
      if (agent.status === "paused" || agent.status === "stopped") {
        await this.waitForKick();
        continue;
      }
      const next = this.store.messages.peekNext(this.agentId);
      if (!next) {
        if (agent.status !== "asleep") {
          transition(this.store, this.agentId, "asleep", "queue_empty", {
            clear: ["current_run_id"],
          });
        }
        await this.waitForKick();
        continue;
      }
      try {
        await this.runOne(next);
      } catch (err) {
        // The loop itself must survive anything a run throws; record it and go on.
        recordRuntimeFailure(this.store, {
          agent_id: this.agentId,
          message_id: next.id,
          summary: `internal runtime error: ${err instanceof Error ? err.message : String(err)}`,
        });
        this.store.tx(() => {
          if (this.store.messages.get(next.id)?.status === "processing") {
            this.store.messages.setStatus(
              next.id,
              "processed",
              this.store.clock.now().toISOString(),
            );
          }
        });
      }
    }
  }

  private async runOne(message: QueuedMessage): Promise<void> {
    const store = this.store;
    const runId = store.ids.next("run");
    const startedAt = store.clock.now();
    const running = store.tx(() => {
      store.messages.setStatus(message.id, "processing");
      store.appendEvent(this.agentId, {
        type: "message_processing_started",
        provenance: provenanceOf(message),
        payload: {
          message_id: message.id,
          run_id: runId,
          kind: message.kind,
          queue_wait_ms: Math.max(0, startedAt.getTime() - Date.parse(message.created_at)),
        },
      });
      return transition(store, this.agentId, "awake_running", `processing ${message.kind}`, {
        current_run_id: runId,
        last_wake_reason: message.kind,
      });
    });
    const controller = new AbortController();
    this.current = { run_id: runId, message_id: message.id, controller, after: undefined };

    let result: TurnResult;
    try {
      result = await this.executor.run({
        agent: running,
        message,
        run_id: runId,
        signal: controller.signal,
        takeInterjections: (boundary) => this.takeInterjections(message.id, boundary),
      });
    } catch (err) {
      const summary = err instanceof Error ? err.message : String(err);
      recordRuntimeFailure(store, {
        agent_id: this.agentId,
        run_id: runId,
        message_id: message.id,
        summary: `turn failed: ${summary}`,
      });
      result = { outcome: "failed", summary };
    }
    const after = this.current.after;
    this.current = undefined;

    const shutdown = this.closed && result.outcome === "aborted";
    store.tx(() => {
      const now = store.clock.now();
      const status = shutdown
        ? "interrupted"
        : result.outcome === "aborted"
          ? "aborted"
          : "processed";
      store.messages.setStatus(message.id, status, now.toISOString());
      const payload: Record<string, unknown> = {
        message_id: message.id,
        run_id: runId,
        outcome: shutdown ? "interrupted" : result.outcome,
        duration_ms: now.getTime() - startedAt.getTime(),
      };
      if (result.outcome === "aborted") payload.reason = result.reason;
      store.appendEvent(this.agentId, {
        type: "message_processed",
        provenance: provenanceOf(message),
        payload,
      });
      const current = store.agents.get(this.agentId);
      if (!current) return;
      store.agents.put({ ...current, total_message_count: current.total_message_count + 1 });
      if (shutdown) return; // a graceful shutdown never rewrites the agent's lifecycle
      if (after === "stopped" && current.status !== "stopped") {
        transition(store, this.agentId, "stopped", "stopped after abort", {
          clear: ["current_run_id"],
        });
      } else if (current.status === "awake_running") {
        transition(store, this.agentId, "awake_idle", "run finished", {
          clear: ["current_run_id"],
        });
      } else {
        transition(store, this.agentId, current.status, "run finished", {
          clear: ["current_run_id"],
        });
      }
    });
  }

  /** Claim queued interject-priority operator prompts so the turn can insert them. */
  private takeInterjections(activeMessageId: string, boundary: string): QueuedMessage[] {
    const store = this.store;
    return store.tx(() => {
      const claimed: QueuedMessage[] = [];
      for (const m of store.messages.withStatus(this.agentId, "queued")) {
        if (m.priority !== "interject" || m.trust !== "trusted_operator") continue;
        store.messages.setStatus(m.id, "interjected", store.clock.now().toISOString());
        store.appendEvent(this.agentId, {
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
