// The composition root: every service of a runtime host, constructed once, in dependency
// order, each handed its collaborators by constructor. Nothing else builds services or
// looks them up; a plane plugs in by adding its service here. Order matters only in one
// place: signals come first, so the ingress can wake loops that are built later.
import { HostMetrics, MetricExport, metricExportSettings } from "../telemetry/metrics.ts";
import { CacheHealth } from "../telemetry/cache-health.ts";
import { Tracing, traceSettings } from "../telemetry/tracing.ts";

import { RuntimeAudit } from "../agent/audit.ts";
import { AgentDirectory } from "../agent/directory.ts";
import { Ingress } from "../agent/ingress.ts";
import { AgentLifecycle } from "../agent/lifecycle.ts";
import { AgentLoops } from "../agent/loops.ts";
import type { RunObserver, TurnExecutor } from "../agent/runtime.ts";
import type { AgentRecord } from "../domain/agent.ts";
import { AgentSignals } from "../agent/signals.ts";
import type { Clock, IdSource } from "../domain/clock.ts";
import { callProvider } from "../providers/fallback.ts";
import { lazyTransports, type LazyTransportSet } from "../providers/lazy-transports.ts";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../providers/retry.ts";
import { Store } from "../store/db.ts";
import { TaskService } from "../tasks/service.ts";
import { SandboxService } from "../sandbox/service.ts";
import { bootId, readProcStat } from "../tasks/process-proc.ts";
import { buildRegistry } from "../tools/builtin.ts";
import { ProviderTurnExecutor, type ModelCall, type PreProviderHook } from "../turn/turn.ts";
import { DeadlineScheduler, type DeadlineHandler } from "../waiting/scheduler.ts";
import { SLEEP_WAKE, SleepWakes, sleepWakeHandler } from "../waiting/sleep.ts";
import {
  PROVIDER_RETRY,
  ProviderRetryObserver,
  providerRetryHandler,
} from "../waiting/provider-retry.ts";
import { TIMER_FIRE, TimerService, timerFireHandler } from "../waiting/timers.ts";
import { TriggerService, baseUrlFromRuntimeFile } from "../waiting/triggers.ts";
import { WakeHints } from "../waiting/wake-hints.ts";
import { externalTriggerContributor } from "../context/external-trigger.ts";
import { defaultContributors } from "../context/contributors.ts";
import { SkillService, skillsContributor, withSkills } from "../context/skills.ts";
import { WorkspaceService } from "../workspace/registry.ts";
import { TemplateService } from "../context/templates.ts";
import { AgentPlane, ChildClosureObserver } from "../tasks/children.ts";
import { WORK_RECHECK, WorkService } from "../work/service.ts";
import { WorkAskEffects } from "../work/asks.ts";
import { ASK_EXPIRY, AskService } from "../asks/service.ts";
import { DEFAULT_MAX_CONTINUATIONS, WorkRunObserver } from "../work/observer.ts";
import { workRecheckHandler } from "../work/recheck.ts";
import { reminderSettings, staleReminderHook } from "../work/reminder.ts";
import { commandPolicy } from "./command-policy.ts";
import { TurnCompactor } from "../memory/compaction.ts";
import { ContinuityService } from "../memory/continuity.ts";
import { MemoryIndexService } from "../memory/search.ts";
import { contextLimits, type ContextLimits } from "../memory/budget.ts";
import { modelMetadata } from "../providers/builtin.ts";
import { ConfigSource } from "./config.ts";
import { UsageService } from "./usage.ts";
import { OperatorTransportService } from "./operator-transport.ts";
import { RetentionJob } from "./retention.ts";
import { StorageWatch } from "./storage-watch.ts";
import { agentHomeDir, homePaths } from "./paths.ts";
import { secureAgentRuntime } from "./files.ts";
import { join } from "node:path";
import { ActionLeash, type HostLeashSettings } from "../policy/leash.ts";
import { AskApprovalGate } from "../policy/approvals.ts";
import { ConsentRegistry } from "../policy/consent.ts";
import { scrubEnv } from "../tasks/env.ts";
import { commandEnvPolicy } from "./command-policy.ts";
import { homedir } from "node:os";
import { SpendLedger, returnReservation, roundCost } from "../budget/ledger.ts";
import { BUDGET_WINDOW, BudgetGate } from "../budget/gate.ts";
import { BudgetControl } from "../budget/control.ts";
import { estimateRequest } from "../memory/tokens.ts";
import { McpFacade } from "./mcp-facade.ts";
import { commandEnvOf } from "../tasks/command-policy.ts";
import { readFileSync } from "node:fs";
import { patchJournalDir, recoverPatchJournals } from "../tools/workspace/apply-patch-engine.ts";

import type { SqlDatabase } from "../store/sql.ts";

const NO_SPAWN: ReadonlySet<string> = new Set(["SpawnAgent"]);
const NONE_HIDDEN: ReadonlySet<string> = new Set();

export type ServiceOptions = {
  home: string;
  clock: Clock;
  ids: IdSource;
  env: NodeJS.ProcessEnv;
  defaultAgentId: string;
  /** Test seam: a turn executor of the test's own instead of the provider turn. */
  executor?: ((services: CoreServices) => TurnExecutor) | undefined;
  /** The Postgres connection when the home's records live there (host.ts opens it). */
  database?: SqlDatabase | undefined;
};

export type Services = ReturnType<typeof buildServices>;
/** The services that exist before the turn executor is built. */
export type CoreServices = Pick<
  Services,
  "paths" | "store" | "config" | "signals" | "ingress" | "tasks" | "scheduler" | "sleep"
>;

export function buildServices(opts: ServiceOptions) {
  const paths = homePaths(opts.home);
  const store = new Store(
    paths.database,
    opts.clock,
    opts.ids,
    opts.database ? { database: opts.database } : {},
  );
  const config = new ConfigSource({ home: opts.home, env: opts.env });
  const signals = new AgentSignals();
  const ingress = new Ingress(store, signals);
  // Commands: a scrubbed environment and bounded output, from the live configuration. The
  // variables MCP server definitions reference are withheld too (the service is built below).
  const mcpEnvNames = async () => await mcp.referencedEnvNames();
  const policy = commandPolicy(config, mcpEnvNames);
  // Every command an agent runs is confined by the sandbox its settings and the host's ask for.
  const sandbox = new SandboxService({
    config: () => config.current().values.sandbox,
    holonHome: opts.home,
    userHome: opts.env.HOME ?? homedir(),
    pathEnv: opts.env.PATH,
    runtime: {
      procs: {
        startTicks: (pid) => {
          const st = readProcStat(pid);
          return st === null || st.state === "Z" ? null : st.start_ticks;
        },
        bootId,
      },
      agent: async (id) => await store.agents.get(id),
      hasActiveTasks: async (id) => (await store.tasks.activeForAgent(id)).length > 0,
      // A connection the allowlist proxy refused is an event of the agent whose command asked.
      onRefused: async (agentId, refusal) => {
        if ((await store.agents.get(agentId)) === undefined) return;
        await store.tx(
          async () =>
            await store.appendEvent(agentId, { type: "sandbox_network_refused", payload: refusal }),
        );
      },
    },
  });
  const workspaces = new WorkspaceService({
    store,
    holonHome: opts.home,
    worktreeArea: join(opts.home, "execution-roots"),
    attachPolicy: () => config.current().values.workspaces.attach_policy,
    sandbox: (agent) => sandbox.summary(agent),
  });
  // A task records where it runs with the same snapshot (and policy) a turn records.
  const tasks = new TaskService(
    store,
    ingress,
    policy,
    (agent) => workspaces.snapshot(agent),
    sandbox,
  );
  const skills = new SkillService({
    store,
    userHome: opts.env.HOME ?? homedir(),
    defaultAgentId: opts.defaultAgentId,
  });
  const handlers = new Map<string, DeadlineHandler>([
    [SLEEP_WAKE, sleepWakeHandler(store)],
    [WORK_RECHECK, workRecheckHandler(store)],
  ]);
  handlers.set(TIMER_FIRE, timerFireHandler(store));
  handlers.set(PROVIDER_RETRY, providerRetryHandler(store)); // rate-limited turns run again
  // A periodic budget's window turned over: the hold lifts (the gate is built below).
  handlers.set(BUDGET_WINDOW, async (d) => await budgetGate.windowHandler()(d));
  const scheduler = new DeadlineScheduler({ store, ingress, handlers });
  const sleep = new SleepWakes(store, scheduler);
  // The waiting plane: timers on the scheduler, wake hints, external trigger capabilities.
  const timers = new TimerService(store, scheduler);
  const wakeHints = new WakeHints(store, ingress, signals);
  const triggers = new TriggerService({
    store,
    hints: wakeHints,
    baseUrl: baseUrlFromRuntimeFile(paths.runtimeFile),
    defaultAgentId: opts.defaultAgentId,
  });
  // Asks: the one way anything waits on a person (budget stops, questions, runaway halts).
  // The work plane holds the item an ask is about; its effects are looked up at call time.
  const asks: AskService = new AskService({
    store,
    ingress,
    signals,
    deadlines: scheduler,
    expiryHours: () => config.current().values.asks.expiry_hours,
    effects: () => [workAsks, approvals, consent, ...mcp.askEffects()],
  });
  handlers.set(ASK_EXPIRY, asks.expiryHandler());
  const work = new WorkService({ store, deadlines: scheduler, ingress, asks });
  // MCP servers: owned processes per (agent, server), confined like commands; workspace
  // servers wait for the operator's consent, an ask of kind approval. The client loads only
  // once the home uses MCP (mcp-facade.ts).
  const mcp: McpFacade = new McpFacade({
    home: opts.home,
    runDir: paths.runDir,
    config: () => config.current().values.mcp,
    sandbox,
    baseEnv: async () => (await commandEnvOf(policy)).env,
    hostEnv: opts.env,
    credential: (profile) => config.credentials().profiles[profile]?.material,
    hostOrigins: () => hostOrigins(paths.runtimeFile),
    store,
    asks: () => asks,
    // Workspace servers' approvals live in the one consent store, beside workspace hooks'.
    consent: () => consent,
    now: () => opts.clock.now(),
  });
  const workAsks = new WorkAskEffects({ store, work, deadlines: scheduler });
  // Context management: the request budget per model and turn-local compaction.
  const contextLimitsOf = (agent: { model_override?: string | null | undefined }) =>
    agentContextLimits(config, agent.model_override ?? null);
  // One set per host, shared with compaction; each family's module loads at its first use.
  const transports = lazyTransports();
  const compactor = new TurnCompactor({
    // PreCompact hooks (the leash is built below; this runs only once turns do).
    beforeCompact: (agent, info) => leash.preCompact(agent, info),
    store,
    limits: contextLimitsOf,
    settings: () => config.current().values.context,
    remoteCompact: async (agent, request, signal) => {
      const c = config
        .candidates(agent.model_override ?? null)
        .find((x) => x.unavailable_reason === undefined);
      if (c?.transport !== "openai_responses") return null;
      const started = opts.clock.now().getTime();
      const res = await (await transports.openai_responses.loaded()).compact(c, request, signal);
      // A compaction is a provider call too: its ledger row (the provider reports no usage
      // for it, so its input is the request's estimate).
      if (res.ok) {
        await store.tx(
          async () =>
            await ledger.record({
              agent_id: agent.agent_id,
              run_id: (await store.agents.get(agent.agent_id))?.current_run_id ?? null,
              round: null,
              kind: "compaction",
              model_ref: c.model_ref,
              usage: {
                input_tokens: estimateRequest(request),
                output_tokens: 0,
                total_tokens: estimateRequest(request),
              },
              elapsed_ms: opts.clock.now().getTime() - started,
              estimated: true,
            }),
        );
      }
      return res;
    },
  });
  const continuity = new ContinuityService(store, (runId) => compactor.runStats(runId));
  // The spend ledger (a row per provider call) and the budget gate that reads its totals.
  const ledger = new SpendLedger({ store, config: () => config.current().values });
  const budgetCandidates = (agent: { model_override?: string | null | undefined }) =>
    config.candidates(agent.model_override ?? null);
  const budgetGate = new BudgetGate({
    store,
    ledger,
    ingress,
    deadlines: scheduler,
    config: () => config.current().values,
    candidates: budgetCandidates,
    inputEstimate: (runId) => compactor.inputEstimate(runId),
  });
  // A budget stop is an ask (the operator's one inbox): opened when the gate records a hold,
  // withdrawn when the hold clears (raised, unfrozen, or its window turned over).
  budgetGate.onExhausted = async (hold, where) => {
    await asks.open({
      agent_id: where.agent_id,
      kind: "budget",
      source: "budget",
      scope: where.work_item_id ? "work_item" : "agent",
      work_item_id: where.work_item_id,
      about: hold.summary,
      detail:
        hold.reason === "frozen"
          ? `Frozen by the operator. Resume with: holon budget unfreeze ${where.agent_id}`
          : `${hold.summary}. Raise it with: holon budget raise ${where.agent_id} ${where.work_item_id ? `--scope work_item:${where.work_item_id} ` : ""}--tokens <n>${hold.until ? ` (or wait: it lifts at ${hold.until})` : ""}`,
      details: { budget_scope: hold.scope, hold },
    });
  };
  budgetGate.onCleared = async (scope, where) => {
    for (const a of await asks.pendingFor(where.agent_id)) {
      if (a.kind === "budget" && a.details?.budget_scope === scope)
        await asks.withdraw(a.id, `the budget hold on ${scope} was lifted`);
    }
  };
  const budgets = new BudgetControl({
    store,
    ledger,
    gate: budgetGate,
    config: () => config.current().values,
    candidates: budgetCandidates,
  });
  // A child's carved budget: checked against the parent's remainder, given back at settle.
  const childBudgets = {
    checkCarve: async (parent: AgentRecord, input: unknown) =>
      await budgets.checkCarve(parent, input),
    reserved: (parentId: string) => budgetGate.reservationsChanged(parentId),
    returned: async (childId: string) => await returnReservation(store, ledger, childId),
  };
  const memoryIndex = new MemoryIndexService(store); // MemorySearch / MemoryGet
  // The prompt frame's sections, in order (also read by `holon debug prompt`).
  const contributors = [
    ...withSkills(
      defaultContributors((agent) => contextLimitsOf(agent).prompt),
      skillsContributor(skills),
    ),
    externalTriggerContributor(triggers),
  ];
  const registry = buildRegistry();
  const toolNames: ReadonlySet<string> = new Set(registry.list().map((t) => t.name));
  // The action leash: rules, taint, hooks. A call that must be asked about opens an approval
  // ask (one per round) and runs once if approved; workspace hooks run once consented to.
  const approvals = new AskApprovalGate({ store, asks, ingress });
  const consent = new ConsentRegistry({ store, asks });
  const leash = new ActionLeash({
    store,
    knownTools: () => toolNames,
    host: () => hostLeashSettings(config),
    gate: approvals,
    consent,
    env: async () => scrubEnv(opts.env, await commandEnvPolicy(config, mcpEnvNames)),
    snapshot: (agent) => workspaces.snapshot(agent),
    sandboxEnforced: (agent) => sandbox.summary(agent).state === "enforced",
    confine: (agent, root) => sandbox.launchFor(agent, root),
    admitFollowup: async (agent, text, authority) => {
      await ingress.admit({
        agent_id: agent.agent_id,
        kind: "internal_followup",
        origin: { kind: "system", subsystem: "stop_hook" },
        body: { type: "text", text: `A Stop hook asked you to continue: ${text}` },
        surface: "runtime_system",
        admission: "runtime_owned",
        metadata: { stop_hook_followup: true, policy_authority: authority },
      });
    },
  });
  store.onEvents(leash.onEvents); // Notification hooks: an ask opened
  const staleReminder = staleReminderHook(store, work, reminderSettings(opts.env));

  const core = {
    paths,
    store,
    config,
    signals,
    ingress,
    tasks,
    scheduler,
    sleep,
    timers,
    wakeHints,
    triggers,
  };
  // Traces (telemetry.traces.enabled): off wraps nothing and loads no SDK module.
  const tracing = new Tracing({
    store,
    settings: traceSettings(config.current().file?.telemetry?.traces, opts.env),
    price: (modelRef, usage) => roundCost(usage, ledger.pricing(modelRef)),
  });
  if (tracing.enabled) store.onEvents(tracing.onEvents);
  const traced = <T>(hook: T, wrap: (h: T) => T): T => (tracing.enabled ? wrap(hook) : hook);
  const bareExecutor: TurnExecutor = opts.executor
    ? opts.executor(core)
    : new ProviderTurnExecutor({
        store,
        registry,
        tasks,
        toolServices: {
          workspaces,
          skills,
          tasks,
          work,
          memory: memoryIndex,
          mcp,
          // The agent plane is built after the loops it needs; tools reach it at call time.
          get agents() {
            return agentPlane;
          },
        },
        // A turn's start is where a changed config file is noticed (one stat per file).
        candidates: (agent) => config.forTurn(agent.model_override ?? null),
        callModel: traced(modelCall(opts.env, opts.clock, transports), (h) =>
          tracing.wrapModelCall(h),
        ),
        contributors,
        executionSnapshot: (agent) => workspaces.snapshot(agent),
        leash,
        afterTool: async (call) => {
          await skills.noteToolCall(call);
          compactor.noteToolCall(call);
        },
        extraTools: (agent) => mcp.toolsFor(agent),
        // Profile narrowing: an agent at the spawn depth limit does not see SpawnAgent.
        hiddenTools: (agent) =>
          (agent.spawn_depth ?? 0) >= config.current().values.agents.max_spawn_depth
            ? NO_SPAWN
            : NONE_HIDDEN,
        // The stale reminder adds its note, then compaction fits the whole request.
        beforeProviderCall: traced<PreProviderHook>(
          async (request, ctx) => await compactor.hook(await staleReminder(request, ctx), ctx),
          (h) => tracing.wrapHook(h),
        ),
        // After the hook: the budget sees the request as it goes out (and its estimate).
        budgetCheck: async (request, ctx) => await budgetGate.check(request, ctx),
        recordCall: async (call) => {
          await ledger.record(call);
        },
        onContextOverflow: (info) => compactor.noteOverflow(info.run_id, info.model_ref),
        afterProviderCall: (info) =>
          compactor.noteUsage(info.run_id, info.model_ref, info.token_usage),
        gate: async (agentId) => await asks.gatedBy(agentId),
        budget: () => {
          const rt = config.current().values.runtime;
          return {
            default_tokens: rt.default_tool_output_tokens,
            max_tokens: rt.max_tool_output_tokens,
          };
        },
      });
  const executor = traced(bareExecutor, (e) => tracing.wrapExecutor(e));
  // Planes that take part in runs (work binding, activation…) add their observer here.
  const observers: RunObserver[] = [
    new WorkRunObserver({
      store,
      work,
      asks,
      maxContinuations: () =>
        positiveInt(opts.env.HOLON_WORK_MAX_CONTINUATIONS) ?? DEFAULT_MAX_CONTINUATIONS,
    }),
  ];
  observers.push(skills.observer());
  observers.push(continuity.observer()); // working memory and episodes at each turn boundary
  observers.push(new ProviderRetryObserver({ store, scheduler })); // arms rate-limit retries
  observers.push(wakeHints); // a pending wake hint becomes its SystemTick at the idle point
  // The agent plane (issue 15): a child's terminal closure settles its supervision task.
  observers.push(
    new ChildClosureObserver({ store, ingress, tasks, workspaces, work, budgets: childBudgets }),
  );
  observers.push(leash.subagentObserver()); // SubagentStop hooks of the supervisor
  // Finished run agents a host start skipped (host.ts): their start-up work (patch
  // journals, home layout) runs before their loop starts again (`holon run --resume`, start).
  const deferredAgents = new Set<string>();
  const loops = new AgentLoops(
    { store, executor, sleep, observers, gate: asks },
    signals,
    async (id) => {
      if (!deferredAgents.delete(id)) return;
      const agent = await store.agents.get(id);
      if (!agent) return;
      secureAgentRuntime(agent.agent_home);
      recoverPatchJournals(patchJournalDir(agent.agent_home));
      await agents.ensureHome(agent);
      if (agent.sandbox_enabled_at === undefined)
        await agents.markSandboxEnabled(id, sandbox.summary(agent));
    },
  );
  const templates = new TemplateService({
    userHome: opts.env.HOME ?? homedir(),
    stagingRoot: join(opts.home, "agents", ".staging"),
    skills,
  });
  const agents = new AgentDirectory({
    store,
    workspaces,
    loops,
    defaultAgentId: opts.defaultAgentId,
    agentHome: (agentId) => agentHomeDir(opts.home, agentId),
    checkModelRef: (ref) => config.checkModelRef(ref),
    homes: templates,
    triggers,
  });
  const agentPlane = new AgentPlane({
    store,
    ingress,
    budgets: childBudgets,
    tasks,
    workspaces,
    work,
    agents,
    loops,
    sleep,
    defaultAgentId: opts.defaultAgentId,
    limits: () => config.current().values.agents,
    asks,
    waits: {
      async cancelForAgent(agentId, reason) {
        await asks.withdrawForAgent(agentId, reason);
        const cancelled: string[] = [];
        for (const t of (await timers.list(agentId)).active) {
          await timers.cancel(agentId, t.timer_id, reason);
          cancelled.push(t.timer_id);
        }
        const trigger = await triggers.current(agentId);
        if (trigger) await triggers.revoke(agentId, undefined, reason);
        return { timers: cancelled, triggers: trigger ? [trigger.external_trigger_id] : [] };
      },
    },
  });
  const audit = new RuntimeAudit(store, opts.defaultAgentId);
  const lifecycle = new AgentLifecycle({
    store,
    agents,
    loops,
    signals,
    sleep,
    // Agent stop cancels its command tasks and stops the children it supervises.
    owned: {
      cancelForAgent: async (agentId, reason) => {
        await asks.withdrawForAgent(agentId, reason); // what a stopped agent asked no longer stands
        mcp.stopAll(agentId); // its MCP servers stop with it
        return [
          ...(await tasks.cancelForAgent(agentId, reason)),
          ...(await agentPlane.cancelForAgent(agentId, reason)),
        ];
      },
    },
    wake: wakeHints,
  });
  // History retention (config `retention.*`): a background job, never on a turn's path.
  const retention = new RetentionJob({
    store,
    policy: () => config.current().values.retention,
    logFile: join(paths.logsDir, "holon.log"),
    // Files derived from removed records follow them: the episode mirror is rewritten from
    // the episodes kept, and the memory index is rebuilt before its next search.
    afterRemoval: async ({ episodes, briefs }) => {
      for (const agentId of new Set([...episodes, ...briefs])) {
        const agent = await store.agents.get(agentId);
        if (!agent) continue;
        if (episodes.includes(agentId)) await continuity.rebuildMirror(agent.agent_home, agentId);
        memoryIndex.markDirty(agent.agent_home);
      }
    },
  });
  // A full disk or a replaced database file: noticed, refused, and recovered from (health.ts).
  const storageWatch = new StorageWatch({ store, defaultAgentId: opts.defaultAgentId });
  // Usage and cost reports (tokens per agent/model/day, priced by the model catalog).
  const usage = new UsageService(store);
  // Prompt-cache health from every provider round's usage (holon status, an event on a drop).
  const cacheHealth = new CacheHealth(store);
  store.onEvents(cacheHealth.onEvents);
  // `GET /metrics` and the OTLP metrics export, when on: one registry, counters fed by
  // committed events, gauges read on scrape or export. Both off: nothing is built or loaded.
  let metrics: HostMetrics | null = null;
  let metricExport: MetricExport | null = null;
  const exportSettings = metricExportSettings(config.current().file?.telemetry?.metrics, opts.env);
  if (config.current().values.telemetry.metrics.enabled || exportSettings.enabled) {
    const m = new HostMetrics({
      agents: async () => await store.agents.list(),
      agent: async (id) => await store.agents.get(id),
      pendingCount: async (id) => await store.messages.pendingCount(id),
      activeTaskCount: async (id) => (await store.tasks.activeForAgent(id)).length,
      maxAgents: () => config.current().values.telemetry.metrics.max_agents,
      pendingAsks: async () => await store.asks.withState("pending", 10_000),
      price: (modelRef, usage) => roundCost(usage, ledger.pricing(modelRef)),
      spans: tracing.enabled ? () => tracing.stats() : undefined,
      metricExports: () => metricExport?.stats() ?? { exported: 0, failed: 0, busy: 0 },
    });
    store.onEvents(m.onEvents);
    if (config.current().values.telemetry.metrics.enabled) metrics = m;
    if (exportSettings.enabled)
      metricExport = new MetricExport({ settings: exportSettings, registry: m.registry });
  }
  if (exportSettings.refused)
    process.stderr.write(`holon: OTLP metrics stay off: ${exportSettings.refused}\n`);
  // Operator transport bindings: relayed operator prompts in, briefs out to their callbacks.
  const operatorTransport = new OperatorTransportService({
    home: opts.home,
    store,
    ingress: core.ingress,
    clock: opts.clock,
    asks,
  });
  return {
    ...core,
    workspaces,
    sandbox,
    skills,
    executor,
    loops,
    agents,
    deferredAgents,
    agentPlane,
    templates,
    lifecycle,
    audit,
    retention,
    storageWatch,
    work,
    asks,
    approvals,
    consent,
    usage,
    ledger,
    budgetGate,
    budgets,
    operatorTransport,
    metrics,
    metricExport,
    cacheHealth,
    tracing,
    compactor,
    contextLimitsOf,
    continuity,
    memoryIndex,
    contributors,
    registry,
    leash,
    mcp,
  };
}

/** The host's own TCP listener, from its runtime file (a workspace MCP server may not use it). */
function hostOrigins(runtimeFile: string): string[] {
  try {
    const f = JSON.parse(readFileSync(runtimeFile, "utf8")) as { http_addr?: string | null };
    return f.http_addr ? [`http://${f.http_addr.replace(/^0\.0\.0\.0:/, "127.0.0.1:")}`] : [];
  } catch {
    return [];
  }
}

/** One settings object per configuration read, so the leash can reuse what it derived. */
const leashSettings = new WeakMap<object, HostLeashSettings>();
const NO_FILE = {};

/** Host-level leash settings from the live configuration. */
function hostLeashSettings(config: ConfigSource): HostLeashSettings {
  const file = config.current().file ?? NO_FILE;
  let settings = leashSettings.get(file);
  if (!settings) {
    const f = file as { permissions?: Record<string, unknown>; hooks?: HostLeashSettings["hooks"] };
    const { external_evidence_mode, ...permissions } = (f.permissions ?? {}) as {
      external_evidence_mode?: HostLeashSettings["external_evidence_mode"];
    } & HostLeashSettings["permissions"];
    settings = {
      permissions,
      external_evidence_mode: external_evidence_mode ?? "ask",
      hooks: f.hooks ?? {},
    };
    leashSettings.set(file, settings);
  }
  return settings;
}

/** The tightest budget among the models a turn of this agent may use. */
function agentContextLimits(config: ConfigSource, override: string | null): ContextLimits {
  const values = config.current().values;
  const refs = config
    .candidates(override)
    .filter((c) => c.unavailable_reason === undefined)
    .map((c) => c.model_ref);
  const all = (refs.length ? refs : [values.model.default ?? ""]).map((ref) =>
    contextLimits(ref || null, modelMetadata(ref, values).entry, values.context),
  );
  return all.reduce((a, b) => (b.prompt < a.prompt ? b : a));
}

/** One set of provider transports per host (the OpenAI one keeps continuation memory). */
function modelCall(env: NodeJS.ProcessEnv, clock: Clock, transports: LazyTransportSet): ModelCall {
  // Tunables of the retry loop (docs/providers.md); unset keeps the defaults.
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY };
  const cap = positiveInt(env.HOLON_PROVIDER_RETRY_AFTER_CAP_MS);
  if (cap !== undefined) policy.retry_after_cap_ms = cap;
  const idle = positiveInt(env.HOLON_PROVIDER_IDLE_TIMEOUT_MS);
  if (idle !== undefined) policy.idle_timeout_ms = idle;
  const total = positiveInt(env.HOLON_PROVIDER_REQUEST_TIMEOUT_MS);
  if (total !== undefined) policy.request_timeout_ms = total;
  return async ({ candidates, request, signal }) => {
    const result = await callProvider({ candidates, request, transports, signal, policy, clock });
    if (result.ok) {
      return {
        ok: true,
        response: result.response,
        timeline: result.timeline,
        model_ref: result.model_ref,
      };
    }
    return {
      ok: false,
      failure: result.failure,
      timeline: result.timeline,
      aborted: result.reason === "operator_abort",
      retry_at: result.retry_at,
    };
  };
}

function positiveInt(v: string | undefined): number | undefined {
  const n = Number(v);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
