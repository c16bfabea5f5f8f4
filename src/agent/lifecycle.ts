// Lifecycle control: pause, resume/start, stop, wake and abort, each written with the
// event that explains it. Stop is a boundary: it aborts the current run, cancels the
// agent's runtime-owned tasks and its sleep deadline, and survives restarts.
import type { AgentRecord } from "../domain/agent.ts";
import type { AdmissionContext } from "../domain/message.ts";
import { HolonError, agentStopped } from "../domain/errors.ts";
import type { Store } from "../store/db.ts";
import type { AgentDirectory } from "./directory.ts";
import type { AgentLoops } from "./loops.ts";
import type { SleepDeadlines } from "./runtime.ts";
import type { AgentSignals } from "./signals.ts";
import { transition } from "./status.ts";

export type ControlAction = "pause" | "resume" | "start" | "stop" | "wake";

export type ControlResult = {
  agent_id: string;
  action: ControlAction;
  status: string;
  disposition: string;
};

/**
 * Operator wake, owned by the waiting plane (waiting/wake-hints.ts): a liveness wake hint
 * with the operator's origin. It becomes a SystemTick at once when the agent can take it,
 * or waits on the agent as its pending wake hint.
 */
export interface OperatorWake {
  wake(
    agentId: string,
    opts: { source: string; reason?: string | undefined; admission: AdmissionContext },
  ): Promise<{ disposition: "woken" | "pending"; message_id?: string }>;
}

/** Whatever runs on an agent's behalf outside its loop (command tasks, later children). */
export interface AgentOwnedWork {
  /** Cancel every live task the agent owns; returns their ids. */
  cancelForAgent(agentId: string, reason: string): Promise<string[]>;
}

export type LifecycleDeps = {
  store: Store;
  agents: AgentDirectory;
  loops: AgentLoops;
  signals: AgentSignals;
  sleep: SleepDeadlines;
  owned: AgentOwnedWork;
  wake: OperatorWake;
};

export class AgentLifecycle {
  private readonly deps: LifecycleDeps;

  constructor(deps: LifecycleDeps) {
    this.deps = deps;
  }

  private get store(): Store {
    return this.deps.store;
  }

  async control(
    agentId: string,
    action: ControlAction,
    source = "operator",
    opts: { reason?: string | undefined; admission?: AdmissionContext } = {},
  ): Promise<ControlResult & { message_id?: string }> {
    const store = this.store;
    const agent = await this.deps.agents.get(agentId);
    const rt = this.deps.loops.get(agentId);
    let disposition: string;
    let messageId: string | undefined;
    switch (action) {
      case "wake": {
        // A liveness wake hint (waiting plane): a SystemTick now, or pending while the agent
        // runs or is paused. The stopped boundary holds: wake never resumes a stopped agent.
        if (agent.status === "stopped") throw agentStopped(agentId);
        await store.tx(async () => {
          const r = await this.deps.wake.wake(agentId, {
            source,
            reason: opts.reason,
            admission: opts.admission ?? "control_authenticated",
          });
          // `pending`: the hint waits for the run to end; `paused`: for the agent's resume.
          disposition =
            r.disposition === "pending" && agent.status === "paused" ? "paused" : r.disposition;
          messageId = r.message_id;
          await store.appendEvent(agentId, {
            type: "wake_requested",
            payload: { source, disposition },
          });
        });
        break;
      }
      case "pause": {
        if (agent.status === "stopped") throw agentStopped(agentId);
        disposition = agent.status === "paused" ? "already_paused" : "paused";
        await this.apply(agentId, action, "paused", disposition);
        break;
      }
      case "resume":
      case "start": {
        if (agent.status !== "paused" && agent.status !== "stopped") {
          disposition = "already_running";
          await store.tx(
            async () =>
              await store.appendEvent(agentId, {
                type: "control_applied",
                payload: { action, disposition, from: agent.status, to: agent.status },
              }),
          );
        } else {
          disposition = "resumed";
          await this.apply(agentId, action, "awake_idle", disposition);
          // Starting an archived agent brings it back: listed again, its loop running.
          if (agent.archived_at) {
            await store.tx(async () => {
              const now = { ...(await this.deps.agents.get(agentId)) };
              delete now.archived_at;
              await store.agents.put(now);
            });
          }
          if (!this.deps.loops.get(agentId) && this.deps.loops.isOpen)
            await this.deps.loops.start(agentId);
        }
        break;
      }
      case "stop": {
        disposition = agent.status === "stopped" ? "already_stopped" : "stopped";
        if (rt?.currentRun) rt.abortCurrentRun("operator_stopped", { stopAfter: true });
        await store.tx(async () => {
          await this.deps.sleep.cancel(agentId, "agent_stopped");
          await this.apply(agentId, action, "stopped", disposition);
        });
        void this.deps.owned.cancelForAgent(agentId, "agent_stopped");
        break;
      }
    }
    // The loop reads the new status: wake it once that is committed (at once, unless a
    // caller's transaction is still open around this call).
    store.afterCommit(() => this.deps.signals.notify(agentId));
    return {
      agent_id: agentId,
      action,
      status: (await this.deps.agents.get(agentId)).status,
      disposition: disposition!,
      ...(messageId ? { message_id: messageId } : {}),
    };
  }

  /** Abort the current run (operator abort). The agent is stopped once the run has ended. */
  async abortCurrentRun(
    agentId: string,
    runId?: string,
  ): Promise<{ agent_id: string; run_id: string }> {
    await this.deps.agents.get(agentId);
    const rt = this.deps.loops.get(agentId);
    if (!rt) {
      throw new HolonError("no_active_run", `agent '${agentId}' has no run in progress`, {
        status: 409,
      });
    }
    const aborted = rt.abortCurrentRun("operator_aborted", { runId, stopAfter: true });
    await this.store.tx(
      async () =>
        await this.store.appendEvent(agentId, {
          type: "current_run_abort_requested",
          payload: { run_id: aborted, mode: "stop_after_abort" },
        }),
    );
    return { agent_id: agentId, run_id: aborted };
  }

  /** Whether the agent's current run is being aborted right now. */
  isAborting(agentId: string): boolean {
    return this.deps.loops.get(agentId)?.currentRun?.aborting ?? false;
  }

  private async apply(
    agentId: string,
    action: ControlAction,
    to: AgentRecord["status"],
    disposition: string,
  ) {
    const store = this.store;
    await store.tx(async () => {
      const from = (await this.deps.agents.get(agentId)).status;
      await transition(store, agentId, to, `control: ${action}`);
      await store.appendEvent(agentId, {
        type: "control_applied",
        payload: { action, disposition, from, to },
      });
    });
  }
}
