// RuntimeHost: the one owner of a HOLON_HOME. It takes the home's lock, has the
// composition root (services.ts) build every service, recovers what a crash or restart
// left behind, starts the agent loops and the deadline scheduler, and shuts all of it
// down in order. It owns no feature: clients reach the services it holds.
import { randomIds, systemClock, type Clock, type IdSource } from "../domain/clock.ts";
import type { TurnExecutor } from "../agent/runtime.ts";
import type { AgentRecord } from "../domain/agent.ts";
import { createBrief } from "../agent/briefs.ts";
import { transition } from "../agent/status.ts";
import { patchJournalDir, recoverPatchJournals } from "../tools/workspace/apply-patch-engine.ts";
import { HolonError } from "../domain/errors.ts";
import { classifyStorageError, isDiskFault } from "../store/health.ts";
import { secureAgentHomes, secureHome } from "./files.ts";
import { acquireHomeLock } from "./lock.ts";
import { homePaths } from "./paths.ts";
import { buildServices, type CoreServices, type Services } from "./services.ts";

import type { SqlDatabase } from "../store/sql.ts";
import { resolveDatabaseUrl } from "./database-url.ts";

export type HostOptions = {
  home: string;
  clock?: Clock;
  ids?: IdSource;
  /** Configuration comes from `<home>/config.json` and this environment (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Test seam: replace the provider turn with an executor of the test's own. */
  executor?: (services: CoreServices) => TurnExecutor;
  defaultAgentId?: string;
  /** Skip the HOLON_HOME lock (only for tests that open a store twice on purpose). */
  skipLock?: boolean;
  /**
   * Start every public agent's loop on open (default). The in-process `holon run` turns this
   * off so a one-shot run works only on its own agent and leaves other agents' queues alone.
   */
  autostartAgents?: boolean;
  /**
   * Acquire every agent group on open (default): the embedded host owns them all. With
   * `false` no group is recovered or run until the caller acquires it (`acquire`), as a host
   * that shares its store with others takes only the groups it is given.
   */
  acquireGroups?: boolean;
};

/** A home the file system refuses (read-only, full, failing): one clear error, not errno. */
function homeFault(home: string, err: unknown): unknown {
  if (err instanceof HolonError || !(isDiskFault(err) || classifyStorageError(err))) return err;
  const full = classifyStorageError(err) === "full";
  return new HolonError(
    full ? "storage_full" : "home_not_writable",
    `${home} cannot be written, so the runtime cannot start (${err instanceof Error ? err.message : String(err)})`,
    {
      status: 503,
      hint: full
        ? "free space on the disk that holds it, then start again"
        : "make it writable (is its file system mounted read-only?), or pick another home with --home or HOLON_HOME",
    },
  );
}

export class RuntimeHost {
  readonly home: string;
  readonly paths: ReturnType<typeof homePaths>;
  readonly startedAt: string;
  readonly services: Services;
  private readonly releaseLock: () => void;
  /** Whether acquiring a group starts its public agents' loops (HostOptions.autostartAgents). */
  private readonly autostartAgents: boolean;
  /** The groups this host has acquired: acquiring one again does nothing. */
  private readonly acquired = new Set<string>();
  private closed = false;

  private constructor(opts: HostOptions, releaseLock: () => void, database?: SqlDatabase) {
    this.home = opts.home;
    this.paths = homePaths(opts.home);
    this.releaseLock = releaseLock;
    this.autostartAgents = opts.autostartAgents !== false;
    this.services = buildServices({
      home: opts.home,
      clock: opts.clock ?? systemClock,
      ids: opts.ids ?? randomIds,
      env: opts.env ?? process.env,
      defaultAgentId: opts.defaultAgentId ?? process.env.HOLON_AGENT_ID ?? "main",
      executor: opts.executor,
      database,
    });
    this.startedAt = this.services.store.clock.now().toISOString();
  }

  static async open(opts: HostOptions): Promise<RuntimeHost> {
    try {
      return await RuntimeHost.openHome(opts);
    } catch (err) {
      throw homeFault(opts.home, err);
    }
  }

  private static async openHome(opts: HostOptions): Promise<RuntimeHost> {
    const paths = homePaths(opts.home);
    // A configured database URL puts the records in Postgres; the backend's code is loaded
    // only then (an embedded host never loads it).
    const url = resolveDatabaseUrl(opts.home, opts.env ?? process.env);
    // 0700 home, 0600 files; a home that cannot hold a database fails here
    secureHome(opts.home, { sqlite: url === null });
    const release = opts.skipLock ? () => {} : acquireHomeLock(paths.lockFile);
    let host: RuntimeHost;
    let database: SqlDatabase | undefined;
    try {
      if (url !== null) database = (await import("../store/pg-open.ts")).openPostgres(url);
      host = new RuntimeHost(opts, release, database);
    } catch (err) {
      database?.close();
      release();
      throw err;
    }
    const { agents, loops, scheduler, store, deferredAgents } = host.services;
    // What building the services did while the store was synchronous: session skill
    // activations a crash left are restored, records older than the active-workspace entry
    // are folded into it.
    await host.services.skills.restore();
    await host.services.workspaces.foldLegacy();
    // Finished `holon run` agents get no per-agent start-up work: it waits for their loop to
    // start again (services.ts), so a start does not slow with every past run. Their records
    // are not even decoded: acquire leaves them out.
    for (const id of await store.agents.dormantRunIds()) deferredAgents.add(id);
    secureAgentHomes(opts.home, deferredAgents);
    // Host-wide start-up work comes first; none of it reads or changes an agent's run state.
    // MCP servers a host killed with SIGKILL left running are killed before anything starts.
    await host.services.mcp.sweep();
    // The spend ledger's first start: rounds from the events still kept (once).
    await host.services.ledger.backfill();
    // Builtin templates into ~/.agents/templates; the default agent exists before its group
    // is acquired (its home gets the holon-default AGENTS.md there when it has none).
    host.services.templates.seedBuiltins();
    if (!(await store.agents.get(agents.defaultAgentId))) {
      await agents.create(agents.defaultAgentId, {}, "default");
    }
    // The sandbox is probed once, now; a namespace a task outlived the last host in gets its
    // proxy back before any task is reattached.
    const sandbox = host.services.sandbox;
    sandbox.probe();
    await sandbox.resume();
    // Every group at once: the embedded host owns them all (a host sharing its store would
    // acquire the groups it is given, through the same method).
    if (opts.acquireGroups !== false) await host.acquire(await store.agents.groupIds());
    loops.open();
    await scheduler.start();
    host.services.retention.start();
    host.services.storageWatch.start();
    await host.services.operatorTransport.redeliverAsks(); // asks still pending go out again
    return host;
  }

  /**
   * Resolves once the start-up work of the subsystems that load on demand is done (an MCP
   * client the home uses: host/mcp-facade.ts). A host whose modules were preloaded, or whose
   * home uses none of them, is ready when `open` returns.
   */
  async ready(): Promise<void> {
    await this.services.mcp.ready();
  }

  // The services clients use most, by name.
  get store() {
    return this.services.store;
  }
  get clock(): Clock {
    return this.services.store.clock;
  }
  get agents() {
    return this.services.agents;
  }
  get lifecycle() {
    return this.services.lifecycle;
  }
  get ingress() {
    return this.services.ingress;
  }
  get tasks() {
    return this.services.tasks;
  }
  get defaultAgentId(): string {
    return this.services.agents.defaultAgentId;
  }
  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Take over these agent groups: the per-agent half of a start, for their agents only, in
   * the order a start has always run it. A message cut off mid-turn is recorded interrupted,
   * approved calls cut short are reported, patch journals are finished or undone, homes get
   * their layout, the sandbox's first start is recorded, public agents' loops start, and
   * then command tasks are reattached and supervised children run again. Recovery comes
   * before any loop starts. Finished `holon run` agents (`deferredAgents`) get their
   * per-agent work when their loop starts again, not here; their tasks and approvals are
   * still recovered. Groups are taken in a batch so a start costs one pass over the agents,
   * not one per group; the task and approval scans run once per call. A group already
   * acquired is skipped: its turns are this host's own, not a crash's leftovers.
   */
  async acquire(groupIds: readonly string[]): Promise<void> {
    const fresh = groupIds.filter((g) => !this.acquired.has(g));
    if (fresh.length === 0) return;
    for (const g of fresh) this.acquired.add(g);
    const { agents, loops, store, deferredAgents } = this.services;
    const group = await store.agents.inGroups(fresh, deferredAgents);
    const members: ReadonlySet<string> = new Set(group.ids);
    await this.recover(group.records);
    // An approved call a crash cut short is reported interrupted (never run twice).
    await this.services.approvals.recover(members);
    // A patch a crash cut short is finished or undone before any agent works again.
    for (const a of group.records) recoverPatchJournals(patchJournalDir(a.agent_home));
    for (const a of group.records) if (!a.archived_at) await agents.ensureHome(a);
    const sandbox = this.services.sandbox;
    for (const a of group.records) {
      if (a.sandbox_enabled_at === undefined)
        await agents.markSandboxEnabled(a.agent_id, sandbox.summary(a));
    }
    if (this.autostartAgents) {
      for (const a of group.records) {
        if (a.visibility === "public" && !a.archived_at) await loops.start(a.agent_id);
      }
    }
    await this.services.tasks.recover(members);
    await this.services.agentPlane.recover(members); // supervised children run again
  }

  /**
   * After a crash or restart: a message that was mid-turn is recorded as interrupted
   * (never silently redone or dropped) and agents that were running become idle.
   * `stopped` and `paused` agents stay as they were. Sleep deadlines need nothing here:
   * the scheduler fires the ones that fell due while the host was down.
   */
  private async recover(records: readonly AgentRecord[]): Promise<void> {
    const store = this.services.store;
    for (const agent of records) {
      await store.tx(async () => {
        for (const m of await store.messages.withStatus(agent.agent_id, "processing")) {
          await store.messages.setStatus(m.id, "interrupted", store.clock.now().toISOString());
          await store.appendEvent(agent.agent_id, {
            type: "message_interrupted",
            provenance: { message_id: m.id },
            payload: {
              message_id: m.id,
              run_id: agent.current_run_id ?? null,
              reason: "runtime_restart",
            },
          });
          await store.transcript.append({
            id: store.ids.next("tr"),
            agent_id: agent.agent_id,
            created_at: store.clock.now().toISOString(),
            kind: "turn_terminal",
            ...(agent.current_run_id ? { run_id: agent.current_run_id } : {}),
            message_id: m.id,
            data: { kind: "aborted", reason: "interrupted_by_restart" },
          });
          await createBrief(store, {
            agent_id: agent.agent_id,
            kind: "failure",
            text: "The run for this message was interrupted when the runtime restarted; it was not redone. Send it again if it is still needed.",
            related_message_id: m.id,
          });
        }
        if (agent.status === "awake_running" || agent.status === "booting") {
          await transition(store, agent.agent_id, "awake_idle", "recovered after restart", {
            clear: ["current_run_id"],
          });
        } else if (agent.current_run_id) {
          // stopped or paused while a run was in flight: keep the status, drop the dead run
          await transition(store, agent.agent_id, agent.status, "recovered after restart", {
            clear: ["current_run_id"],
          });
        }
      });
    }
  }

  /** Graceful shutdown: stop the loops without persisting any agent as stopped. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const { ingress, scheduler, loops, tasks, store } = this.services;
    await this.services.retention.stop();
    this.services.storageWatch.stop();
    this.services.operatorTransport.close();
    scheduler.close();
    await ingress.close();
    await loops.close();
    this.services.mcp.close(); // every MCP server this host started stops with it
    await this.services.tracing.shutdown(); // spans still queued go out (bounded)
    await this.services.metricExport?.shutdown(); // the final values go out (bounded)
    tasks.close();
    await this.services.sandbox.close();
    store.close();
    this.releaseLock();
  }
}
