// RuntimeHost: the one owner of a HOLON_HOME. It opens the store, recovers what a crash
// or restart left behind, keeps one AgentRuntime per live agent, and is the only way the
// HTTP layer and in-process clients change anything.
import { mkdirSync } from "node:fs";
import { AgentId, type AgentListEntry, type AgentRecord } from "../domain/agent.ts";
import { randomIds, systemClock, type Clock, type IdSource } from "../domain/clock.ts";
import { HolonError, agentStopped, unknownAgent } from "../domain/errors.ts";
import type { MessageEnvelope } from "../domain/message.ts";
import { admitMessage, type AdmissionRequest } from "../agent/admission.ts";
import { createBrief } from "../agent/briefs.ts";
import { AgentRuntime, type TurnExecutor } from "../agent/runtime.ts";
import { transition } from "../agent/status.ts";
import { Store } from "../store/db.ts";
import { acquireHomeLock } from "./lock.ts";
import { agentHomeDir, homePaths } from "./paths.ts";

export type HostOptions = {
  home: string;
  clock?: Clock;
  ids?: IdSource;
  /** Builds the turn executor once the host exists. */
  executor?: (host: RuntimeHost) => TurnExecutor;
  defaultAgentId?: string;
  /** Skip the HOLON_HOME lock (only for tests that open a store twice on purpose). */
  skipLock?: boolean;
  /**
   * Start every public agent's loop on open (default). The in-process `holon run` turns this
   * off so a one-shot run works only on its own agent and leaves other agents' queues alone.
   */
  autostartAgents?: boolean;
};

export type ControlAction = "pause" | "resume" | "start" | "stop" | "wake";

export type CreateAgentOptions = {
  visibility?: "public" | "private";
  workspace_root?: string;
  lineage_parent_agent_id?: string;
};

export class RuntimeHost {
  readonly home: string;
  readonly paths: ReturnType<typeof homePaths>;
  readonly store: Store;
  readonly defaultAgentId: string;
  readonly startedAt: string;
  private readonly runtimes = new Map<string, AgentRuntime>();
  private readonly executor: TurnExecutor;
  private readonly releaseLock: () => void;
  private closed = false;
  private opened = false;

  private constructor(opts: HostOptions, releaseLock: () => void) {
    this.home = opts.home;
    this.paths = homePaths(opts.home);
    this.releaseLock = releaseLock;
    this.store = new Store(this.paths.database, opts.clock ?? systemClock, opts.ids ?? randomIds);
    this.defaultAgentId = opts.defaultAgentId ?? process.env.HOLON_AGENT_ID ?? "main";
    this.startedAt = this.store.clock.now().toISOString();
    this.executor = opts.executor ? opts.executor(this) : unconfiguredExecutor(this);
  }

  static open(opts: HostOptions): RuntimeHost {
    const paths = homePaths(opts.home);
    mkdirSync(paths.runDir, { recursive: true });
    const release = opts.skipLock ? () => {} : acquireHomeLock(paths.lockFile);
    let host: RuntimeHost;
    try {
      host = new RuntimeHost(opts, release);
    } catch (err) {
      release();
      throw err;
    }
    host.recover();
    if (!host.store.agents.get(host.defaultAgentId)) {
      host.createAgent(host.defaultAgentId, {}, "default");
    }
    if (opts.autostartAgents !== false) {
      for (const agent of host.store.agents.list()) {
        if (agent.visibility === "public") host.startRuntime(agent.agent_id);
      }
    }
    host.opened = true;
    for (const hook of host.openHooks) hook();
    return host;
  }

  get clock(): Clock {
    return this.store.clock;
  }

  // ---- agents ---------------------------------------------------------------------

  getAgent(agentId: string): AgentRecord {
    const agent = this.store.agents.get(agentId);
    if (!agent) throw unknownAgent(agentId);
    return agent;
  }

  /** Public agents are reachable by id; private ones only through their owner. */
  getPublicAgent(agentId: string): AgentRecord {
    const agent = this.getAgent(agentId);
    if (agent.visibility !== "public") throw unknownAgent(agentId);
    return agent;
  }

  listAgents(): AgentListEntry[] {
    return this.store.agents
      .list()
      .filter((a) => a.visibility === "public")
      .map((a) => ({
        agent_id: a.agent_id,
        kind: a.kind,
        visibility: a.visibility,
        status: a.status,
        pending: this.store.messages.pendingCount(a.agent_id),
        is_default: a.agent_id === this.defaultAgentId,
      }));
  }

  createAgent(
    agentId: string,
    opts: CreateAgentOptions = {},
    kind: AgentRecord["kind"] = "named",
  ): AgentRecord {
    const idCheck = AgentId.safeParse(agentId);
    if (!idCheck.success) {
      throw new HolonError("invalid_agent_id", idCheck.error.issues[0]?.message ?? "bad agent id");
    }
    const store = this.store;
    const agentHome = agentHomeDir(this.home, agentId);
    const record = store.tx(() => {
      if (store.agents.get(agentId)) {
        throw new HolonError("agent_exists", `agent '${agentId}' already exists`, { status: 409 });
      }
      const now = store.clock.now().toISOString();
      const visibility = opts.visibility ?? "public";
      const record: AgentRecord = {
        agent_id: agentId,
        agent_home: agentHome,
        kind,
        visibility,
        ownership: "self_owned",
        profile_preset: visibility === "public" ? "public_named" : "private_child",
        status: "booting",
        created_at: now,
        updated_at: now,
        total_message_count: 0,
        total_input_tokens: 0,
        total_output_tokens: 0,
        total_model_rounds: 0,
      };
      if (opts.workspace_root) record.workspace_root = opts.workspace_root;
      if (opts.lineage_parent_agent_id)
        record.lineage_parent_agent_id = opts.lineage_parent_agent_id;
      store.agents.put(record);
      store.appendEvent(agentId, {
        type: "agent_created",
        payload: {
          agent_id: agentId,
          kind,
          visibility,
          ownership: record.ownership,
          profile_preset: record.profile_preset,
          agent_home: agentHome,
        },
      });
      return transition(store, agentId, "awake_idle", "created");
    });
    mkdirSync(agentHome, { recursive: true });
    if (this.opened) this.startRuntime(agentId);
    return record;
  }

  /** Bind the agent to a workspace (used by `run --workspace-root` and create). */
  setWorkspace(agentId: string, workspaceRoot: string): void {
    const store = this.store;
    store.tx(() => {
      const agent = this.getAgent(agentId);
      const next: AgentRecord = {
        ...agent,
        workspace_root: workspaceRoot,
        updated_at: store.clock.now().toISOString(),
      };
      delete next.cwd;
      store.agents.put(next);
      store.appendEvent(agentId, {
        type: "workspace_attached",
        payload: { workspace_root: workspaceRoot },
      });
    });
  }

  /** Agent-scoped model override; affects future turns only. `undefined` clears it. */
  setModelOverride(agentId: string, model: string | undefined): AgentRecord {
    if (model !== undefined) {
      if (!/^[^/\s]+\/\S+$/.test(model)) {
        throw new HolonError("invalid_model_ref", `'${model}' is not a model ref`, {
          hint: "use <provider_id>/<model>, e.g. anthropic/claude-sonnet-4-6",
        });
      }
      this.modelRefCheck?.(model);
    }
    const store = this.store;
    return store.tx(() => {
      const agent = this.getAgent(agentId);
      const next: AgentRecord = { ...agent, updated_at: store.clock.now().toISOString() };
      if (model === undefined) delete next.model_override;
      else next.model_override = model;
      store.agents.put(next);
      store.appendEvent(agentId, {
        type: "agent_model_changed",
        payload: { previous: agent.model_override ?? null, override_model: model ?? null },
      });
      return next;
    });
  }

  /** Throws a HolonError when a model ref names an unknown provider; set by the wiring. */
  modelRefCheck: ((modelRef: string) => void) | undefined;

  setCwd(agentId: string, cwd: string): void {
    const store = this.store;
    store.tx(() => {
      const agent = this.getAgent(agentId);
      store.agents.put({ ...agent, cwd, updated_at: store.clock.now().toISOString() });
    });
  }

  /** Remove a temporary private agent's runtime (its records stay for audit). */
  async retireAgent(agentId: string): Promise<void> {
    const rt = this.runtimes.get(agentId);
    this.runtimes.delete(agentId);
    await rt?.close();
  }

  runtimeIfLive(agentId: string): AgentRuntime | undefined {
    return this.runtimes.get(agentId);
  }

  /** Model selection as status surfaces show it; filled in by the provider layer. */
  modelState(agent: AgentRecord): Record<string, unknown> | null {
    return this.modelStateProvider ? this.modelStateProvider(agent) : null;
  }

  modelStateProvider: ((agent: AgentRecord) => Record<string, unknown>) | undefined;

  /** The model catalog and availability for `GET /models`; set by the wiring. */
  modelCatalog: (() => Record<string, unknown>) | undefined;

  runtime(agentId: string): AgentRuntime {
    const rt = this.runtimes.get(agentId);
    if (!rt) throw unknownAgent(agentId);
    return rt;
  }

  /** Make sure this agent's loop runs (a no-op when it already does). */
  ensureRuntime(agentId: string): void {
    this.getAgent(agentId);
    this.startRuntime(agentId);
  }

  private startRuntime(agentId: string): void {
    if (this.runtimes.has(agentId)) return;
    const rt = new AgentRuntime(this.store, agentId, this.executor);
    this.runtimes.set(agentId, rt);
    rt.start();
  }

  // ---- ingress -------------------------------------------------------------------

  /** Admit a message (durably) and wake the agent's loop. */
  admit(req: AdmissionRequest): MessageEnvelope {
    if (this.closed) {
      throw new HolonError("runtime_shutting_down", "the runtime is shutting down", {
        status: 503,
      });
    }
    const envelope = admitMessage(this.store, req);
    this.runtimes.get(req.agent_id)?.notify();
    return envelope;
  }

  private pendingAdmissions: {
    req: AdmissionRequest;
    resolve: (m: MessageEnvelope) => void;
    reject: (err: unknown) => void;
  }[] = [];

  /**
   * Admit with group commit: admissions arriving in the same event-loop turn share one
   * transaction. Each promise settles only after that commit, so nothing is acknowledged
   * before it is durable. A request that fails its own checks is rejected alone (those
   * checks run before anything is written).
   */
  admitAsync(req: AdmissionRequest): Promise<MessageEnvelope> {
    if (this.closed) {
      return Promise.reject(
        new HolonError("runtime_shutting_down", "the runtime is shutting down", { status: 503 }),
      );
    }
    return new Promise((resolve, reject) => {
      this.pendingAdmissions.push({ req, resolve, reject });
      if (this.pendingAdmissions.length === 1) setImmediate(() => this.flushAdmissions());
    });
  }

  private flushAdmissions(): void {
    const items = this.pendingAdmissions;
    this.pendingAdmissions = [];
    const outcomes: ({ ok: true; envelope: MessageEnvelope } | { ok: false; err: unknown })[] = [];
    try {
      this.store.tx(() => {
        for (const item of items) {
          try {
            outcomes.push({ ok: true, envelope: admitMessage(this.store, item.req) });
          } catch (err) {
            if (!(err instanceof HolonError)) throw err; // unexpected: fail the whole batch
            outcomes.push({ ok: false, err });
          }
        }
      });
    } catch (err) {
      for (const item of items) item.reject(err);
      return;
    }
    items.forEach((item, i) => {
      const o = outcomes[i]!;
      if (o.ok) {
        this.runtimes.get(item.req.agent_id)?.notify();
        item.resolve(o.envelope);
      } else item.reject(o.err);
    });
  }

  // ---- lifecycle control ---------------------------------------------------------

  control(
    agentId: string,
    action: ControlAction,
    source = "operator",
  ): { agent_id: string; action: ControlAction; status: string; disposition: string } {
    const store = this.store;
    const agent = this.getAgent(agentId);
    const rt = this.runtimes.get(agentId);
    let disposition: string;
    switch (action) {
      case "wake": {
        if (agent.status === "stopped") throw agentStopped(agentId);
        if (agent.status === "asleep") {
          store.tx(() => {
            transition(store, agentId, "awake_idle", "operator wake", { last_wake_reason: "wake" });
            store.appendEvent(agentId, {
              type: "wake_requested",
              payload: { source, disposition: "woken" },
            });
          });
          disposition = "woken";
        } else {
          disposition = agent.status === "paused" ? "paused" : "already_awake";
          store.tx(() =>
            store.appendEvent(agentId, {
              type: "wake_requested",
              payload: { source, disposition },
            }),
          );
        }
        break;
      }
      case "pause": {
        if (agent.status === "stopped") throw agentStopped(agentId);
        disposition = agent.status === "paused" ? "already_paused" : "paused";
        this.applyControl(agentId, action, "paused", disposition);
        break;
      }
      case "resume":
      case "start": {
        if (agent.status !== "paused" && agent.status !== "stopped") {
          disposition = "already_running";
          store.tx(() =>
            store.appendEvent(agentId, {
              type: "control_applied",
              payload: { action, disposition, from: agent.status, to: agent.status },
            }),
          );
        } else {
          disposition = "resumed";
          this.applyControl(agentId, action, "awake_idle", disposition);
        }
        break;
      }
      case "stop": {
        disposition = agent.status === "stopped" ? "already_stopped" : "stopped";
        if (rt?.currentRun) rt.abortCurrentRun("operator_stopped", { stopAfter: true });
        this.applyControl(agentId, action, "stopped", disposition);
        break;
      }
    }
    rt?.notify();
    return { agent_id: agentId, action, status: this.getAgent(agentId).status, disposition };
  }

  private applyControl(
    agentId: string,
    action: ControlAction,
    to: AgentRecord["status"],
    disposition: string,
  ) {
    const store = this.store;
    store.tx(() => {
      const from = this.getAgent(agentId).status;
      transition(store, agentId, to, `control: ${action}`);
      store.appendEvent(agentId, {
        type: "control_applied",
        payload: { action, disposition, from, to },
      });
    });
  }

  /** Abort the current run (operator abort). The agent is stopped once the run has ended. */
  abortCurrentRun(agentId: string, runId?: string): { agent_id: string; run_id: string } {
    this.getAgent(agentId);
    const rt = this.runtime(agentId);
    const aborted = rt.abortCurrentRun("operator_aborted", { runId, stopAfter: true });
    this.store.tx(() =>
      this.store.appendEvent(agentId, {
        type: "current_run_abort_requested",
        payload: { run_id: aborted, mode: "stop_after_abort" },
      }),
    );
    return { agent_id: agentId, run_id: aborted };
  }

  // ---- recovery and shutdown -----------------------------------------------------

  /**
   * After a crash or restart: a message that was mid-turn is recorded as interrupted
   * (never silently redone or dropped) and agents that were running become idle.
   * `stopped` and `paused` agents stay as they were.
   */
  private recover(): void {
    const store = this.store;
    for (const agent of store.agents.list()) {
      store.tx(() => {
        for (const m of store.messages.withStatus(agent.agent_id, "processing")) {
          store.messages.setStatus(m.id, "interrupted", store.clock.now().toISOString());
          store.appendEvent(agent.agent_id, {
            type: "message_interrupted",
            provenance: { message_id: m.id },
            payload: {
              message_id: m.id,
              run_id: agent.current_run_id ?? null,
              reason: "runtime_restart",
            },
          });
          store.transcript.append({
            id: store.ids.next("tr"),
            agent_id: agent.agent_id,
            created_at: store.clock.now().toISOString(),
            kind: "turn_terminal",
            ...(agent.current_run_id ? { run_id: agent.current_run_id } : {}),
            message_id: m.id,
            data: { kind: "aborted", reason: "interrupted_by_restart" },
          });
          createBrief(store, {
            agent_id: agent.agent_id,
            kind: "failure",
            text: "The run for this message was interrupted when the runtime restarted; it was not redone. Send it again if it is still needed.",
            related_message_id: m.id,
          });
        }
        if (agent.status === "awake_running" || agent.status === "booting") {
          transition(store, agent.agent_id, "awake_idle", "recovered after restart", {
            clear: ["current_run_id"],
          });
        } else if (agent.current_run_id) {
          // stopped or paused while a run was in flight: keep the status, drop the dead run
          transition(store, agent.agent_id, agent.status, "recovered after restart", {
            clear: ["current_run_id"],
          });
        }
      });
    }
  }

  /** Runtime-wide activity summary for `GET /control/runtime/status` and `daemon status`. */
  runtimeStatus() {
    const agents = this.store.agents.list().filter((a) => a.visibility === "public");
    const processing = agents.filter((a) => a.status === "awake_running" || a.status === "booting");
    const waiting = agents.filter((a) => a.status === "awaiting_task");
    const activeTasks = this.store.tasks.active().length;
    const lastFailure = agents
      .map((a) => a.last_failure)
      .filter((f) => f !== undefined)
      .sort((a, b) => b.occurred_at.localeCompare(a.occurred_at))[0];
    return {
      pid: process.pid,
      home_dir: this.home,
      started_at: this.startedAt,
      default_agent: this.defaultAgentId,
      activity: {
        active_agent_count: agents.filter((a) => a.status !== "stopped").length,
        active_task_count: activeTasks,
        processing_agent_count: processing.length,
        waiting_agent_count: waiting.length,
        state:
          processing.length > 0
            ? "processing"
            : waiting.length > 0 || activeTasks > 0
              ? "waiting"
              : "idle",
      },
      last_failure: lastFailure ?? null,
    };
  }

  private readonly shutdownHooks: (() => Promise<void> | void)[] = [];
  private readonly wakeTimers = new Set<ReturnType<typeof setTimeout>>();

  private readonly openHooks: (() => void)[] = [];

  /** Run once the host is open (recovery that needs live agents, such as task reattachment). */
  onOpen(hook: () => void): void {
    this.openHooks.push(hook);
  }

  onShutdown(hook: () => Promise<void> | void): void {
    this.shutdownHooks.push(hook);
  }

  /**
   * A session-local wake requested by `Sleep(duration_ms)`: after the delay a runtime-owned
   * `system_tick` is admitted, unless the agent was stopped or the host shut down meanwhile.
   */
  scheduleWake(agentId: string, durationMs: number): void {
    const timer = setTimeout(() => {
      this.wakeTimers.delete(timer);
      if (this.closed) return;
      const agent = this.store.agents.get(agentId);
      if (!agent || agent.status === "stopped") return;
      this.admit({
        agent_id: agentId,
        kind: "system_tick",
        origin: { kind: "system", subsystem: "sleep" },
        body: {
          type: "text",
          text: `Scheduled wake: you asked to be woken ${durationMs} ms after resting. Check on what you were waiting for and continue.`,
        },
        surface: "runtime_system",
        admission: "runtime_owned",
      });
    }, durationMs);
    timer.unref?.();
    this.wakeTimers.add(timer);
    const until = new Date(this.clock.now().getTime() + durationMs).toISOString();
    this.store.tx(() => {
      const agent = this.getAgent(agentId);
      this.store.agents.put({ ...agent, sleeping_until: until });
      this.store.appendEvent(agentId, {
        type: "wake_scheduled",
        payload: { wake_at: until, duration_ms: durationMs },
      });
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Graceful shutdown: stop the loops without persisting any agent as stopped. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pendingAdmissions.length > 0) this.flushAdmissions();
    for (const t of this.wakeTimers) clearTimeout(t);
    await Promise.all([...this.runtimes.values()].map((rt) => rt.close()));
    for (const hook of this.shutdownHooks) await hook();
    this.runtimes.clear();
    this.store.close();
    this.releaseLock();
  }
}

/** Until a model provider is configured, every turn fails honestly and says why. */
function unconfiguredExecutor(host: RuntimeHost): TurnExecutor {
  return {
    async run(req) {
      const { recordRuntimeFailure } = await import("../agent/briefs.ts");
      const summary =
        "No model provider is configured, so this message could not be worked on. Configure one (holon config set model.default <provider>/<model>).";
      recordRuntimeFailure(host.store, {
        agent_id: req.agent.agent_id,
        run_id: req.run_id,
        message_id: req.message.id,
        summary,
      });
      return { outcome: "failed", summary };
    },
  };
}
