// The MCP client side of the host: which servers an agent has, the sessions to them, and the
// calls its tools make. Servers come from three places: the host's config.json (`mcp.servers`),
// the agent's own record (`mcp.servers`, changed only through the control plane), and the
// `.mcp.json` at the root the agent works in (started only once the operator approved it;
// consent.ts). Host entries apply to root agents; a child has only what its own record names.
//
// A server is an owned process (or an HTTP session), one per (agent, server): started on the
// first use with the startup timeout, its MCP roots the agent's execution root; a host server
// marked `shared` is one session for all agents, with no roots. A stdio server runs under the
// agent's sandbox profile (bubblewrap, with `--die-with-parent`), in its own process group,
// from the scrubbed command environment plus its own `env`. Its pid and start time are
// recorded (records.ts) so a host killed with SIGKILL has them killed at the next start. A
// crash makes the next call start it again at once; repeated failures back off. A session
// unused for `mcp.idle_stop_ms` is stopped; shutdown stops all.
//
// The catalog of a turn comes from each server's last `tools/list` (catalog.ts), so it is
// built without starting anything; only a server never listed is started for its first list.
//
// A server may ask the user for input during a call (`elicitation/create`, form mode only):
// it becomes an input ask of the calling agent (elicitation.ts) and the call's own timeout is
// paused while the operator is asked.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { loadSdk, sdk } from "./sdk.ts";
import type { AgentRecord } from "../domain/agent.ts";
import { HolonError } from "../domain/errors.ts";
import type { SandboxService } from "../sandbox/service.ts";
import type { Store } from "../store/db.ts";
import { unknownAgent } from "../domain/errors.ts";
import { executionBinding } from "../workspace/roots.ts";
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  McpConfigError,
  WORKSPACE_MCP_FILE,
  WORKSPACE_MCP_MAX_BYTES,
  definitionDigest,
  describeDefinition,
  referencedEnvNamesOf,
  expand,
  parseDefinition,
  parseWorkspaceFile,
  redactDefinition,
  referenceText,
  referencesOf,
  type McpConfig,
  type Reference,
  type ServerDefinition,
} from "./config.ts";
import { ToolListingCache, toListing, type ListedTool, type ToolListing } from "./catalog.ts";
import {
  consentPresentation,
  migrateApprovalsFile,
  type McpConsentBinding,
  type WorkspaceConsent,
} from "./consent.ts";
import { nameTools } from "./names.ts";
import { ServerProcessRecords, killGroup } from "./records.ts";
import type { ChildStdioTransport } from "./stdio.ts";
import { MAX_MESSAGE_BYTES } from "./limits.ts";
import {
  ElicitationWaiters,
  MAX_ELICITATIONS_PER_CALL,
  elicitationAsk,
  refuseRequest,
  type ElicitResult,
  type ElicitationOutcome,
  type RequestedSchema,
} from "./elicitation.ts";
import type { AskDraft } from "../asks/service.ts";
import { renderCallResult, type McpCallResult, type RenderedResult } from "./results.ts";

export type ServerSource = "host" | "agent" | "workspace";

/** One server as it applies to one agent now. */
export type ResolvedServer = {
  name: string;
  source: ServerSource;
  def: ServerDefinition;
  /** SHA-256 of the definition: its tool listing and (workspace) its approval are bound to it. */
  digest: string;
  /** The session it uses (one per agent, or one for a shared server). */
  key: string;
  shared: boolean;
  workspace: string | null;
  /** Workspace servers: what the operator decided; others are always `operator`. */
  consent: "operator" | "approved" | "pending" | "denied";
  /** References that may be expanded (workspace: only those the approval listed). */
  allowed: ReadonlySet<string> | null;
};

export type ServerState = "stopped" | "starting" | "running" | "backoff" | "failed";

export type CatalogEntry = {
  /** The model-facing name (`mcp__<server>__<tool>`, sanitized). */
  name: string;
  server: string;
  tool: string;
  description: string;
  input_schema: Record<string, unknown>;
};

export type AgentCatalog = { key: string; entries: CatalogEntry[] };

/** The asks plane as MCP uses it (elicitation); absent in a graph without it. */
export interface McpAsks {
  open(draft: AskDraft): Promise<{ id: string }>;
  withdraw(id: string, reason: string): Promise<unknown>;
  list(filter: {
    state: "pending";
    limit: number;
  }): Promise<{ id: string; details: Record<string, unknown> }[]>;
}

export type McpDeps = {
  /** <holon_home>: listings and approvals live under mcp/. */
  home: string;
  runDir: string;
  config: () => McpConfig;
  sandbox: SandboxService;
  /** The scrubbed environment commands start from now (tasks/env.ts). */
  baseEnv: () => Promise<Record<string, string>>;
  /** The host's own environment, for `${VAR}` references. */
  hostEnv: NodeJS.ProcessEnv;
  /** A credential profile's secret, for `${credential:<id>}` references. */
  credential: (profile: string) => string | undefined;
  /** The host's own listeners (`http://127.0.0.1:<port>`): a workspace server may not point there. */
  hostOrigins: () => string[];
  store: Store;
  asks?: () => McpAsks | undefined;
  /** The host's consent store (workspace servers); without it none is ever approved. */
  consent?: () => WorkspaceConsent | undefined;
  now: () => Date;
};

const MAX_BACKOFF_MS = 30_000;
const CLIENT_INFO = { name: "holon", version: "0.1.0" };

class McpCallError extends HolonError {}

function fail(kind: string, message: string, hint: string, retryable = false): McpCallError {
  const e = new McpCallError(kind, message, { hint, details: { retryable } });
  return e;
}

/**
 * A call's own timeout, paused while the call waits on the operator (an elicitation): the
 * server's time is bounded by `tool_timeout_ms`, the person's by the elicitation timeout.
 */
class CallClock {
  #left: number;
  #since = 0;
  #timer: NodeJS.Timeout | null = null;
  #paused = 0;
  readonly #onTimeout: () => void;

  constructor(ms: number, onTimeout: () => void) {
    this.#left = ms;
    this.#onTimeout = onTimeout;
    this.#run();
  }

  #run(): void {
    this.#since = Date.now();
    this.#timer = setTimeout(this.#onTimeout, Math.max(0, this.#left));
    this.#timer.unref();
  }

  pause(): void {
    if (this.#paused++ > 0 || !this.#timer) return;
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#left -= Date.now() - this.#since;
  }

  resume(): void {
    if (--this.#paused > 0) return;
    this.#paused = 0;
    if (!this.#timer) this.#run();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#paused = Number.POSITIVE_INFINITY;
  }
}

/** A call in flight on a session: whom an elicitation during it is about. */
type InflightCall = {
  agentId: string;
  tool: string;
  callId: string | null;
  signal: AbortSignal;
  clock: CallClock;
  /** Elicitation asks opened during the call and still open. */
  open: Set<string>;
  outcomes: ElicitationOutcome[];
  requests: number;
};

/** One live (or last) session to a server. */
class Session {
  state: ServerState = "stopped";
  client: Client | null = null;
  transport: Transport | null = null;
  child: ChildProcess | null = null;
  pid: number | null = null;
  startedAt: string | null = null;
  lastUsed = 0;
  inflight = 0;
  readonly calls = new Map<number, InflightCall>();
  failures = 0;
  notBefore = 0;
  lastError: string | null = null;
  starting: Promise<Client> | null = null;
  readonly server: ResolvedServer;
  agentId: string | null;

  constructor(server: ResolvedServer, agentId: string | null) {
    this.server = server;
    this.agentId = agentId;
  }
}

export class McpService {
  readonly #deps: McpDeps;
  readonly #sessions = new Map<string, Session>();
  readonly #listings: ToolListingCache;
  readonly #records: ServerProcessRecords;
  /** The calls waiting on an elicitation ask; also the asks plane's hooks for them. */
  readonly elicitations = new ElicitationWaiters();
  readonly #catalogs = new Map<string, AgentCatalog>();
  #callSeq = 0;
  #idleTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(deps: McpDeps) {
    this.#deps = deps;
    this.#listings = new ToolListingCache(join(deps.home, "mcp", "tools"));
    this.#records = new ServerProcessRecords(deps.runDir);
  }

  /**
   * Called once at start: kill the servers a host killed with SIGKILL left behind, withdraw
   * the elicitation asks its calls left, and take in an old approvals file.
   */
  async sweep(): Promise<number[]> {
    const consent = this.#deps.consent?.();
    if (consent) {
      try {
        await migrateApprovalsFile(join(this.#deps.home, "mcp", "approvals.json"), consent);
      } catch {
        // left in place; tried again at the next start
      }
    }
    // A call that waited on an elicitation died with the host: its ask answers nothing now.
    const asks = this.#deps.asks?.();
    for (const a of (await asks?.list({ state: "pending", limit: 500 })) ?? []) {
      if (a.details?.mcp_elicitation !== undefined)
        await asks!.withdraw(a.id, "the host restarted; the tool call that asked is gone");
    }
    return this.#records.sweep();
  }

  #envNames: { config: McpConfig; version: number; names: string[] } | null = null;
  #agentsVersion = 0;

  /**
   * Every host environment variable a host or agent definition, or an approved workspace one,
   * reads: withheld from commands.
   * Kept until the configuration or an agent's MCP settings change (it is read per command).
   */
  async referencedEnvNames(): Promise<readonly string[]> {
    const config = this.#deps.config();
    const kept = this.#envNames;
    const consent = this.#deps.consent?.();
    const version = this.#agentsVersion * 1_000_003 + (consent?.version ?? 0);
    if (kept && kept.config === config && kept.version === version) return kept.names;
    const names = referencedEnvNamesOf(
      (await consent?.grants("mcp_server", "granted")) ?? [],
      config.servers,
      (await this.#deps.store.agents.list()).map(agentServers),
    );
    this.#envNames = { config, version, names };
    return names;
  }

  /**
   * The agent-level setting `mcp.servers.<name>` (a definition, or null to remove it), checked
   * and returned as the agent's next `mcp` field; the caller records it with its event.
   */
  async setAgentSetting(agentId: string, key: string, value: unknown): Promise<AgentRecord> {
    const store = this.#deps.store;
    return await store.tx(async () => {
      const agent = await store.agents.get(agentId);
      if (!agent) throw unknownAgent(agentId);
      const previous = agent.mcp?.servers?.[key.slice("mcp.servers.".length)];
      const mcp = this.#agentSetting(agent, key, value);
      const next: AgentRecord = { ...agent, updated_at: store.clock.now().toISOString() };
      if (mcp) next.mcp = mcp;
      else delete next.mcp;
      await store.agents.put(next);
      const shown = (v: unknown, name: string) =>
        v ? redactDefinition(McpService.check(name, v)) : null;
      const name = key.slice("mcp.servers.".length);
      await store.appendEvent(agentId, {
        type: "agent_setting_changed",
        payload: { key, previous: shown(previous, name), value: shown(mcp?.servers[name], name) },
      });
      return next;
    });
  }

  #agentSetting(agent: AgentRecord, key: string, value: unknown): AgentRecord["mcp"] {
    const m = /^mcp\.servers\.(.+)$/.exec(key);
    if (!m) {
      throw new HolonError("unknown_setting", `no agent setting named ${JSON.stringify(key)}`, {
        hint: "MCP servers of an agent are set with the key mcp.servers.<name>",
      });
    }
    const name = m[1]!;
    const servers = { ...(agent.mcp?.servers ?? {}) };
    if (value === null || value === undefined) delete servers[name];
    else servers[name] = McpService.check(name, value) as Record<string, unknown>;
    this.#agentsVersion++;
    this.#catalogs.delete(agent.agent_id);
    return Object.keys(servers).length ? { servers } : undefined;
  }

  // -------------------------------------------------------------------------------------
  // Which servers an agent has

  /** The servers that apply to this agent now, with their consent state. */
  async serversFor(agent: AgentRecord | null): Promise<ResolvedServer[]> {
    const out = new Map<string, ResolvedServer>();
    const cfg = this.#deps.config();
    const child = agent?.supervisor_agent_id !== undefined;
    if (!child) {
      for (const [name, def] of Object.entries(cfg.servers)) {
        if (def.enabled === false) continue;
        const shared = def.shared === true;
        out.set(name, this.#resolved(agent, name, "host", def, shared, null, "operator", null));
      }
    }
    if (agent) {
      for (const [name, def] of Object.entries(agentServers(agent))) {
        if (def.enabled === false) {
          out.delete(name);
          continue;
        }
        out.set(name, this.#resolved(agent, name, "agent", def, false, null, "operator", null));
      }
      for (const ws of await this.#workspaceServers(agent))
        if (!out.has(ws.name)) out.set(ws.name, ws);
    }
    return [...out.values()];
  }

  #resolved(
    agent: AgentRecord | null,
    name: string,
    source: ServerSource,
    def: ServerDefinition,
    shared: boolean,
    workspace: string | null,
    consent: ResolvedServer["consent"],
    allowed: ReadonlySet<string> | null,
  ): ResolvedServer {
    const digest = definitionDigest(def);
    const owner = shared ? "shared" : (agent?.agent_id ?? "host");
    const key = createHash("sha256")
      .update(`${owner}\0${source}\0${name}\0${digest}\0${workspace ?? ""}`)
      .digest("hex")
      .slice(0, 24);
    return { name, source, def, digest, key, shared, workspace, consent, allowed };
  }

  /** The `.mcp.json` servers of the agent's execution root, each with its consent state. */
  async #workspaceServers(agent: AgentRecord): Promise<ResolvedServer[]> {
    const root = executionBinding(agent).execution_root;
    const file = join(root, WORKSPACE_MCP_FILE);
    let text: string;
    try {
      const st = statSync(file, { throwIfNoEntry: false }); // usually absent: no error built
      if (st === undefined || !st.isFile() || st.size > WORKSPACE_MCP_MAX_BYTES) return [];
      text = readFileSync(file, "utf8");
    } catch {
      return [];
    }
    const parsed = parseWorkspaceFile(text);
    const out: ResolvedServer[] = [];
    for (const [name, def] of Object.entries(parsed.servers)) {
      if (def.enabled === false) continue;
      const { shared: _ignored, ...rest } = def as ServerDefinition & { shared?: boolean };
      const clean = rest as ServerDefinition;
      const digest = definitionDigest(clean);
      const state = (await this.#deps.consent?.()?.peek(binding(root, name, clean, digest)))?.state;
      const consent = state === "granted" ? "approved" : state === "refused" ? "denied" : "pending";
      // The approval listed every reference of this exact definition (the digest binds it).
      const allowed = new Set(consent === "approved" ? referencesOf(clean).map(referenceText) : []);
      out.push(this.#resolved(agent, name, "workspace", clean, false, root, consent, allowed));
    }
    return out;
  }

  /**
   * Ask the operator about every workspace server of this agent that has no decision yet
   * (one ask per definition; an ask already open is not opened again).
   */
  async requestConsent(agent: AgentRecord): Promise<string[]> {
    const consent = this.#deps.consent?.();
    if (!consent) return [];
    const pending = (await this.serversFor(agent)).filter((s) => s.consent === "pending");
    const asked: string[] = [];
    for (const s of pending) {
      const b = binding(s.workspace!, s.name, s.def, s.digest);
      b.present = consentPresentation({
        workspace: s.workspace!,
        server: s.name,
        sha256: s.digest,
        references: referencesOf(s.def).map(referenceText),
        shown: describeDefinition(s.def),
      });
      const c = await consent.check(agent.agent_id, b);
      if (c.ask_id) asked.push(c.ask_id);
    }
    return asked;
  }

  // -------------------------------------------------------------------------------------
  // The catalog

  /**
   * The MCP tools of this agent's next turn: from each usable server's kept listing; a server
   * never listed is started once for its list (bounded by its startup timeout). The same
   * object comes back while nothing changed, so the tool list (and the prompt's cached
   * prefix) stays the same.
   */
  async catalog(agent: AgentRecord): Promise<AgentCatalog> {
    await this.requestConsent(agent);
    const usable = (await this.serversFor(agent)).filter(
      (s) => s.consent === "operator" || s.consent === "approved",
    );
    this.#reap(agent.agent_id, new Set(usable.map((s) => s.key)));
    const pairs: { server: string; tool: string; t: ListedTool }[] = [];
    const keyParts: string[] = [];
    for (const s of usable) {
      let listing = this.#listings.get(s.digest);
      if (!listing) {
        try {
          listing = await this.#list(agent, s);
        } catch {
          continue; // its state says why; the turn goes on without it
        }
      }
      keyParts.push(`${s.name}:${s.digest}:${listing.digest}`);
      for (const t of listing.tools) {
        if (s.def.enabled_tools && !s.def.enabled_tools.includes(t.name)) continue;
        if (s.def.disabled_tools?.includes(t.name)) continue;
        pairs.push({ server: s.name, tool: t.name, t });
      }
    }
    const key = keyParts.join("|");
    const kept = this.#catalogs.get(agent.agent_id);
    if (kept && kept.key === key) return kept;
    const byPair = new Map(pairs.map((p) => [`${p.server}\0${p.tool}`, p.t]));
    const entries = nameTools(pairs).map((n) => {
      const t = byPair.get(`${n.server}\0${n.tool}`)!;
      return {
        name: n.name,
        server: n.server,
        tool: n.tool,
        description: t.description,
        input_schema: t.input_schema,
      };
    });
    const next = { key, entries };
    if (this.#catalogs.size > 1_000) this.#catalogs.clear();
    this.#catalogs.set(agent.agent_id, next);
    return next;
  }

  async #list(agent: AgentRecord | null, s: ResolvedServer): Promise<ToolListing> {
    const session = this.#session(agent, s);
    const client = await this.#ensure(session, agent);
    const listing = toListing(await listTools(client, startupTimeout(s.def)), this.#deps.now());
    this.#listings.put(s.digest, listing);
    return listing;
  }

  // -------------------------------------------------------------------------------------
  // Calls

  /**
   * Call one tool. Every failure is a HolonError with a stable kind (the tool dispatch makes it
   * a tool error envelope): the server could not start, was not approved, crashed or timed
   * out, refused the arguments, or said the call failed.
   */
  async call(
    agent: AgentRecord,
    serverName: string,
    tool: string,
    args: Record<string, unknown>,
    opts: { signal: AbortSignal; chars: number; call_id?: string },
  ): Promise<RenderedResult> {
    const s = (await this.serversFor(agent)).find((x) => x.name === serverName);
    if (!s) {
      throw fail(
        "mcp_server_unknown",
        `MCP server '${serverName}' is not configured for this agent any more`,
        "use the tools in the current catalog",
      );
    }
    if (s.consent === "pending" || s.consent === "denied") {
      throw fail(
        "mcp_server_not_approved",
        `MCP server '${serverName}' from the workspace's .mcp.json ${s.consent === "denied" ? "was denied" : "is waiting for the operator's approval"}`,
        "work without it; the operator decides with `holon asks`",
      );
    }
    const session = this.#session(agent, s);
    const client = await this.#ensure(session, agent);
    const timeout = s.def.tool_timeout_ms ?? DEFAULT_CALL_TIMEOUT_MS;
    // The call's own clock stops while the operator is asked (an elicitation); the SDK's
    // timeout is only the outer bound of both.
    const { McpError, ErrorCode } = sdk();
    const expired = new AbortController();
    const clock = new CallClock(timeout, () =>
      expired.abort(new McpError(ErrorCode.RequestTimeout, "Request timed out")),
    );
    const outer =
      timeout + MAX_ELICITATIONS_PER_CALL * this.#deps.config().elicitation_timeout_ms + 5_000;
    const id = ++this.#callSeq;
    const inflight: InflightCall = {
      agentId: agent.agent_id,
      tool,
      callId: opts.call_id ?? null,
      signal: opts.signal,
      clock,
      open: new Set(),
      outcomes: [],
      requests: 0,
    };
    session.calls.set(id, inflight);
    session.inflight++;
    session.lastUsed = Date.now();
    try {
      const raw = (await client.callTool({ name: tool, arguments: args }, undefined, {
        timeout: outer,
        maxTotalTimeout: outer,
        signal: AbortSignal.any([opts.signal, expired.signal]),
      })) as McpCallResult;
      session.failures = 0;
      const out = renderCallResult(serverName, tool, raw, opts.chars);
      if (inflight.outcomes.length) out.result.elicitations = inflight.outcomes;
      return out;
    } catch (err) {
      throw this.#callFailure(session, err, timeout, opts.signal);
    } finally {
      clock.stop();
      session.calls.delete(id);
      for (const askId of inflight.open)
        await this.#withdraw(askId, "the tool call ended before the operator answered");
      session.inflight--;
      session.lastUsed = Date.now();
    }
  }

  /**
   * A server's `elicitation/create` (the SDK checked its shape: form mode, a flat object of
   * primitive fields). It becomes an input ask of the one agent whose call is in flight on the
   * session; anything else (no call, calls of several agents, over the caps, no asks plane)
   * is declined. Resolves when the operator answers, or with `cancel` when the time is up,
   * the call ends or the server gives up.
   */
  async #elicit(
    session: Session,
    params: { message: string; requestedSchema: RequestedSchema; task?: unknown },
    signal: AbortSignal,
  ): Promise<ElicitResult> {
    const asks = this.#deps.asks?.();
    const calls = [...session.calls.values()];
    const agents = new Set(calls.map((c) => c.agentId));
    if (!asks || calls.length === 0 || agents.size !== 1 || params.task !== undefined)
      return { action: "decline" };
    // Several calls of one agent at once: the oldest is named (the asker cannot say which).
    const call = calls[0]!;
    if (++call.requests > MAX_ELICITATIONS_PER_CALL) return { action: "decline" };
    if (refuseRequest(params.message, params.requestedSchema) !== null)
      return { action: "decline" };
    const timeoutMs = this.#deps.config().elicitation_timeout_ms;
    let askId: string;
    try {
      askId = (
        await asks.open(
          elicitationAsk(
            call.agentId,
            {
              server: session.server.name,
              tool: call.tool,
              call_id: call.callId,
              message: params.message,
              requested_schema: params.requestedSchema,
            },
            timeoutMs,
          ),
        )
      ).id;
    } catch {
      return { action: "decline" };
    }
    const waiting = this.elicitations.wait(askId);
    call.open.add(askId);
    call.clock.pause();
    const giveUp = (why: string) => async () => await this.#withdraw(askId, why);
    const onCallEnd = giveUp("the tool call was interrupted before the operator answered");
    const onServer = giveUp("the MCP server withdrew its question");
    call.signal.addEventListener("abort", onCallEnd);
    signal.addEventListener("abort", onServer);
    const timer = setTimeout(() => {
      this.elicitations.markTimedOut(askId);
      void this.#withdraw(
        askId,
        `the operator did not answer within ${Math.round(timeoutMs / 1000)} s`,
      ); // never rejects (it catches)
    }, timeoutMs);
    timer.unref();
    try {
      const { outcome, result } = await waiting;
      call.outcomes.push(outcome);
      return result;
    } finally {
      clearTimeout(timer);
      call.open.delete(askId);
      call.signal.removeEventListener("abort", onCallEnd);
      signal.removeEventListener("abort", onServer);
      call.clock.resume();
    }
  }

  #callFailure(session: Session, err: unknown, timeout: number, signal: AbortSignal): Error {
    const name = session.server.name;
    if (signal.aborted) return err as Error;
    const { McpError, ErrorCode } = sdk();
    if (err instanceof McpError) {
      if (err.code === ErrorCode.RequestTimeout) {
        // A server that does not answer is not trusted with the next call either.
        this.#stop(session, `a call timed out after ${timeout} ms`);
        return fail(
          "mcp_timeout",
          `MCP server '${name}' did not answer within ${timeout} ms`,
          "try again later or with smaller input; the server is restarted on the next call",
          true,
        );
      }
      if (err.code === ErrorCode.ConnectionClosed) {
        const why = this.#transportFailure(session) ?? "the connection closed";
        if (session.client) this.#crashed(session, why); // else its close already counted it
        return fail(
          "mcp_server_crashed",
          `MCP server '${name}' stopped during the call (${why})`,
          "call it again: the server is started again",
          true,
        );
      }
      if (err.code === ErrorCode.InvalidParams) {
        return fail(
          "invalid_tool_input",
          `MCP server '${name}' refused the arguments: ${clip(err.message)}`,
          "call the tool again with arguments that match its schema",
        );
      }
      return fail(
        "mcp_error",
        `MCP server '${name}' answered with an error: ${clip(err.message)}`,
        "check the arguments or try another way",
      );
    }
    if (session.state !== "running") {
      const why = this.#transportFailure(session) ?? (err as Error).message;
      if (session.client) this.#crashed(session, why);
      return fail(
        "mcp_server_crashed",
        `MCP server '${name}' stopped during the call (${clip(why)})`,
        "call it again: the server is started again",
        true,
      );
    }
    return fail(
      "mcp_error",
      `calling MCP server '${name}' failed: ${clip((err as Error).message)}`,
      "try again",
      true,
    );
  }

  /** Withdraw an elicitation ask; a host shutting down (store closed) leaves it to the next start. */
  async #withdraw(askId: string, why: string): Promise<void> {
    try {
      await this.#deps.asks?.()?.withdraw(askId, why);
    } catch {
      // the next start withdraws what is left (sweep)
    }
  }

  #transportFailure(session: Session): string | null {
    return stdioOf(session.transport)?.failure ?? null;
  }

  // -------------------------------------------------------------------------------------
  // Sessions

  #session(agent: AgentRecord | null, s: ResolvedServer): Session {
    let session = this.#sessions.get(s.key);
    if (!session) {
      session = new Session(s, s.shared ? null : (agent?.agent_id ?? null));
      this.#sessions.set(s.key, session);
    }
    return session;
  }

  async #ensure(session: Session, agent: AgentRecord | null): Promise<Client> {
    if (this.#closed)
      throw fail(
        "mcp_unavailable",
        "the host is shutting down",
        "try again after the host started",
        true,
      );
    if (session.state === "running" && session.client) return session.client;
    if (session.starting) return session.starting;
    const wait = session.notBefore - Date.now();
    if (wait > 0) {
      throw fail(
        "mcp_server_unavailable",
        `MCP server '${session.server.name}' failed ${session.failures} times in a row (${session.lastError ?? "unknown"}); it is tried again in ${Math.ceil(wait / 1000)} s`,
        "work without it for now, or ask the operator to check it with `holon mcp test`",
        true,
      );
    }
    session.starting = this.#start(session, agent).finally(() => {
      session.starting = null;
    });
    return session.starting;
  }

  async #start(session: Session, agent: AgentRecord | null): Promise<Client> {
    const {
      Client,
      ElicitRequestFormParamsSchema,
      ListRootsRequestSchema,
      Protocol,
      ToolListChangedNotificationSchema,
    } = await loadSdk();
    const s = session.server;
    const timeout = startupTimeout(s.def);
    session.state = "starting";
    let transport: Transport;
    try {
      transport = await this.#transport(session, agent);
    } catch (err) {
      this.#failedStart(session, err instanceof Error ? err.message : String(err));
      if (err instanceof McpConfigError)
        throw fail(
          "mcp_server_unavailable",
          `MCP server '${s.name}' cannot start: ${err.message}`,
          err.hint ?? "fix its definition",
          false,
        );
      if (err instanceof HolonError) throw err;
      throw fail(
        "mcp_server_unavailable",
        `MCP server '${s.name}' cannot start: ${(err as Error).message}`,
        "check its definition with `holon mcp test`",
        true,
      );
    }
    const root = agent && !s.shared ? executionBinding(agent).execution_root : null;
    // No `sampling` (it would spend tokens outside every budget); elicitation in form mode only.
    const client = new Client(CLIENT_INFO, {
      capabilities: { roots: { listChanged: false }, elicitation: { form: {} } },
    });
    // Installed below the SDK client's own elicitation wrapper, which answers a malformed
    // request with a long validation error: here anything but a well-formed form request (a
    // nested field, URL mode, a task) is declined.
    Protocol.prototype.setRequestHandler.call(
      client,
      LooseElicitRequest as never,
      async (request: { params?: unknown }, extra: { signal: AbortSignal }) => {
        const form = ElicitRequestFormParamsSchema.safeParse(request.params);
        if (!form.success) return { action: "decline" };
        return await this.#elicit(session, form.data as never, extra.signal);
      },
    );
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: root ? [{ uri: pathToFileURL(root).href, name: "execution root" }] : [],
    }));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      // Takes effect between turns: the next catalog reads the new listing.
      try {
        this.#listings.put(s.digest, toListing(await listTools(client, timeout), this.#deps.now()));
      } catch {
        // the old listing stays
      }
    });
    client.onclose = () => {
      if (session.client === client && session.state === "running") {
        this.#crashed(session, this.#transportFailure(session) ?? "the connection closed");
      }
    };
    session.transport = transport;
    const timer = new Promise<void>((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`no answer to initialize within ${timeout} ms`)),
        timeout,
      );
      t.unref();
      client.connect(transport, { timeout }).then(
        () => {
          clearTimeout(t);
          resolve();
        },
        (e: unknown) => {
          clearTimeout(t);
          reject(e instanceof Error ? e : new Error(String(e)));
        },
      );
    });
    try {
      await timer;
    } catch (err) {
      const t = stdioOf(transport);
      const parts = [(err as Error).message];
      if (t?.failure) parts.push(t.failure);
      if (t && t.garbageCount > 0)
        parts.push(
          `it printed ${t.garbageCount} line(s) on stdout that are not JSON-RPC, first: ${JSON.stringify(t.garbage[0])}`,
        );
      if (t?.stderrTail.trim()) parts.push(`stderr: ${clip(t.stderrTail.trim(), 400)}`);
      const why = parts.join("; ");
      this.#kill(session);
      this.#failedStart(session, why);
      throw fail(
        "mcp_server_unavailable",
        `MCP server '${s.name}' did not start: ${why}`,
        "the operator can check it with `holon mcp test`",
        true,
      );
    }
    session.client = client;
    session.state = "running";
    session.startedAt = this.#deps.now().toISOString();
    session.lastUsed = Date.now();
    this.#armIdle();
    return client;
  }

  #failedStart(session: Session, why: string): void {
    session.failures++;
    session.lastError = clip(why, 1_000);
    session.state = session.failures > 1 ? "backoff" : "failed";
    session.notBefore = Date.now() + backoffMs(session.failures);
    session.client = null;
  }

  #crashed(session: Session, why: string): void {
    this.#kill(session);
    session.failures++;
    session.lastError = clip(why, 1_000);
    session.state = session.failures > 1 ? "backoff" : "failed";
    session.notBefore = Date.now() + backoffMs(session.failures);
    session.client = null;
  }

  async #transport(session: Session, agent: AgentRecord | null): Promise<Transport> {
    const s = session.server;
    const resolve = this.#resolver(s);
    const where = `MCP server '${s.name}'`;
    if (!("command" in s.def)) {
      const url = expand(s.def.url, resolve, `${where} url`);
      if (s.source === "workspace") this.#refuseOwnListener(s.name, url);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(s.def.headers ?? {}))
        headers[k] = expand(v, resolve, `${where} header ${k}`);
      const requestInit: RequestInit = { headers, redirect: "error" };
      const { SSEClientTransport, StreamableHTTPClientTransport } = sdk();
      return s.def.type === "sse"
        ? new SSEClientTransport(new URL(url), { requestInit, fetch: cappedFetch })
        : new StreamableHTTPClientTransport(new URL(url), { requestInit, fetch: cappedFetch });
    }
    const def = s.def;
    const command = expand(def.command, resolve, `${where} command`);
    const args = (def.args ?? []).map((a) => expand(a, resolve, `${where} args`));
    const env: Record<string, string> = { ...(await this.#deps.baseEnv()) };
    for (const [k, v] of Object.entries(def.env ?? {}))
      env[k] = expand(v, resolve, `${where} env ${k}`);
    // A shared server belongs to no agent: it starts in HOLON_HOME unless its cwd says otherwise.
    const root = agent && !s.shared ? executionBinding(agent).execution_root : this.#deps.home;
    const cwdRaw = def.cwd ? expand(def.cwd, resolve, `${where} cwd`) : root;
    const cwd = isAbsolute(cwdRaw) ? cwdRaw : resolve_(root, cwdRaw);
    if (!existsSync(cwd)) throw new McpConfigError(`${where} cwd ${cwd} does not exist`);
    let argv = [command, ...args];
    const launch =
      agent && !s.shared
        ? this.#deps.sandbox.launchFor(agent, root, def.writable_paths ?? [], underTmp(argv))
        : null;
    if (launch) {
      const full = launch.argv(argv, { writable: [], tty: false, statusFd: null });
      // The server dies with bubblewrap, and bubblewrap with the host.
      argv = [full[0]!, "--die-with-parent", ...full.slice(1)];
    }
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd,
      env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    child.on("error", () => {});
    session.child = child;
    session.pid = child.pid ?? null;
    if (child.pid !== undefined) {
      this.#records.write(s.key, {
        agent_id: session.agentId,
        server: s.name,
        pid: child.pid,
        pgid: child.pid,
        started_at: this.#deps.now().toISOString(),
      });
      const pid = child.pid;
      child.once("exit", () => {
        if (session.pid === pid) {
          session.pid = null;
          this.#records.remove(s.key);
        }
      });
    }
    return new (sdk().ChildStdioTransport)(child);
  }

  #resolver(s: ResolvedServer): (r: Reference) => string | undefined {
    return (r) => {
      if (s.allowed && !s.allowed.has(referenceText(r))) return undefined;
      return r.kind === "credential" ? this.#deps.credential(r.name) : this.#deps.hostEnv[r.name];
    };
  }

  /** A workspace server may not reach the host's own control plane (with the operator's token). */
  #refuseOwnListener(name: string, url: string): void {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    const port = u.port || (u.protocol === "https:" ? "443" : "80");
    for (const origin of this.#deps.hostOrigins()) {
      const o = new URL(origin);
      const loopback =
        ["127.0.0.1", "localhost", "::1", "0.0.0.0", o.hostname].includes(host) ||
        host.startsWith("127.");
      if (loopback && port === (o.port || "80")) {
        throw new McpConfigError(
          `MCP server '${name}' points at this host's own listener (${u.host}); a workspace server may not`,
          "a workspace cannot hand the agent the host's control plane",
        );
      }
    }
  }

  #kill(session: Session): void {
    const client = session.client;
    session.client = null;
    const child = session.child;
    session.child = null;
    if (child?.pid !== undefined) {
      killGroup(child.pid, child.pid);
      this.#records.remove(session.server.key);
    }
    session.pid = null;
    void session.transport?.close().catch(() => {});
    session.transport = null;
    if (client) void client.close().catch(() => {});
  }

  #stop(session: Session, why: string): void {
    this.#kill(session);
    session.state = "stopped";
    session.lastError = why;
  }

  #armIdle(): void {
    if (this.#idleTimer) return;
    const every = Math.max(
      1_000,
      Math.min(60_000, Math.floor(this.#deps.config().idle_stop_ms / 4)),
    );
    this.#idleTimer = setInterval(() => this.stopIdle(), every);
    this.#idleTimer.unref();
  }

  /** Stop every session unused for `mcp.idle_stop_ms` (and not in a call). */
  stopIdle(now = Date.now()): number {
    const idle = this.#deps.config().idle_stop_ms;
    let n = 0;
    for (const session of this.#sessions.values()) {
      if (session.state === "running" && session.inflight === 0 && now - session.lastUsed >= idle) {
        this.#stop(session, "stopped after being idle");
        session.lastError = null;
        n++;
      }
    }
    return n;
  }

  /** Stop this agent's sessions of servers it no longer has (removed or redefined). */
  #reap(agentId: string, keep: ReadonlySet<string>): void {
    for (const [key, session] of this.#sessions) {
      if (session.agentId !== agentId || keep.has(key)) continue;
      this.#stop(session, "its definition was removed or changed");
      this.#sessions.delete(key);
    }
  }

  /** Stop all sessions, this agent's only when named (agent stopped or archived). */
  stopAll(agentId?: string): void {
    for (const [key, session] of this.#sessions) {
      if (agentId !== undefined && session.agentId !== agentId) continue;
      this.#stop(session, "stopped");
      if (agentId !== undefined) this.#sessions.delete(key);
    }
  }

  /** Shutdown: stop every server; nothing is left running. */
  close(): void {
    this.#closed = true;
    if (this.#idleTimer) clearInterval(this.#idleTimer);
    this.stopAll();
  }

  /** The pids of running servers (tests and status). */
  pids(): number[] {
    return [...this.#sessions.values()].map((s) => s.pid).filter((p): p is number => p !== null);
  }

  // -------------------------------------------------------------------------------------
  // What surfaces show

  /** Each server of this agent (or the host's, with no agent): where from, state, tools. */
  async status(agent: AgentRecord | null): Promise<ServerView[]> {
    const servers = await this.serversFor(agent);
    const named = new Map<string, string>();
    const pairs: { server: string; tool: string }[] = [];
    for (const s of servers) {
      const l = this.#listings.get(s.digest);
      for (const t of l?.tools ?? []) pairs.push({ server: s.name, tool: t.name });
    }
    for (const n of nameTools(pairs)) named.set(`${n.server}\0${n.tool}`, n.name);
    return servers.map((s) => {
      const session = this.#sessions.get(s.key);
      const listing = this.#listings.get(s.digest);
      const transport = "command" in s.def ? "stdio" : s.def.type;
      return {
        name: s.name,
        source: s.source,
        transport,
        shared: s.shared,
        workspace: s.workspace,
        consent: s.consent,
        state: session?.state ?? "stopped",
        pid: session?.pid ?? null,
        started_at: session?.state === "running" ? session.startedAt : null,
        last_error: session?.lastError ?? null,
        failures: session?.failures ?? 0,
        calls_in_flight: session?.inflight ?? 0,
        definition: redactDefinition(s.def),
        shown: describeDefinition(s.def),
        sha256: s.digest,
        listed_at: listing?.listed_at ?? null,
        tools: (listing?.tools ?? []).map((t) => ({
          tool: t.name,
          name: named.get(`${s.name}\0${t.name}`) ?? null,
          enabled:
            (!s.def.enabled_tools || s.def.enabled_tools.includes(t.name)) &&
            !s.def.disabled_tools?.includes(t.name),
        })),
        rejected_tools: listing?.rejected ?? [],
      };
    });
  }

  /**
   * Connect to a server now, list its tools and report how long it took (`holon mcp test`).
   * A workspace server that is not approved is not started.
   */
  async test(agent: AgentRecord | null, name: string): Promise<TestReport> {
    const s = (await this.serversFor(agent)).find((x) => x.name === name);
    if (!s) {
      throw new HolonError(
        "unknown_mcp_server",
        `no MCP server named '${name}'${agent ? ` for agent ${agent.agent_id}` : ""}`,
        {
          status: 404,
          hint: "list them with `holon mcp list`",
        },
      );
    }
    if (s.consent === "pending" || s.consent === "denied") {
      return {
        name,
        ok: false,
        error: `not started: the workspace server is ${s.consent === "denied" ? "denied" : "awaiting approval"}`,
        latency_ms: null,
        tools: [],
        rejected_tools: [],
      };
    }
    const session = this.#session(agent, s);
    session.notBefore = 0; // the operator asked: try now
    const t0 = performance.now();
    try {
      const listing = await this.#list(agent, s);
      return {
        name,
        ok: true,
        error: null,
        latency_ms: Math.round((performance.now() - t0) * 100) / 100,
        tools: listing.tools.map((t) => t.name),
        rejected_tools: listing.rejected,
      };
    } catch (err) {
      return {
        name,
        ok: false,
        error: (err as Error).message,
        latency_ms: null,
        tools: [],
        rejected_tools: [],
      };
    }
  }

  /** Check a definition the way config does (for `holon mcp add` through the host). */
  static check(name: string, def: unknown): ServerDefinition {
    try {
      return parseDefinition(name, def);
    } catch (err) {
      const e = err as McpConfigError;
      throw new HolonError("invalid_mcp_server", e.message, { hint: e.hint ?? "see docs/mcp.md" });
    }
  }
}

export type ServerView = {
  name: string;
  source: ServerSource;
  transport: string;
  shared: boolean;
  workspace: string | null;
  consent: ResolvedServer["consent"];
  state: ServerState;
  pid: number | null;
  started_at: string | null;
  last_error: string | null;
  failures: number;
  calls_in_flight: number;
  definition: Record<string, unknown>;
  shown: string;
  sha256: string;
  listed_at: string | null;
  tools: { tool: string; name: string | null; enabled: boolean }[];
  rejected_tools: { name: string; reason: string }[];
};

export type TestReport = {
  name: string;
  ok: boolean;
  error: string | null;
  latency_ms: number | null;
  tools: string[];
  rejected_tools: { name: string; reason: string }[];
};

/**
 * `tools/list`, read loosely: the SDK's own listTools rejects the whole answer when one tool's
 * schema is malformed; here each tool is judged on its own (catalog.ts). Follows pagination.
 */
async function listTools(client: Client, timeout: number): Promise<unknown[]> {
  const tools: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 20; page++) {
    const res = await client.request(
      { method: "tools/list", params: cursor ? { cursor } : {} },
      LooseToolList,
      { timeout },
    );
    tools.push(...res.tools);
    cursor = typeof res.nextCursor === "string" ? res.nextCursor : undefined;
    if (!cursor || tools.length >= 500) break;
  }
  return tools;
}

const LooseElicitRequest = z.looseObject({
  method: z.literal("elicitation/create"),
  params: z.unknown(),
});

const LooseToolList = z.looseObject({
  tools: z.array(z.unknown()).max(10_000),
  nextCursor: z.string().optional(),
});

/**
 * fetch with a cap on each response body, like the stdio transport's message cap: a server
 * answering without end fails that request instead of filling the host's memory.
 */
async function cappedFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  if (!res.body) return res;
  let seen = 0;
  const body = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        seen += chunk.byteLength;
        if (seen > MAX_MESSAGE_BYTES)
          ctl.error(
            new Error(`the server sent more than ${MAX_MESSAGE_BYTES} bytes in one response`),
          );
        else ctl.enqueue(chunk);
      },
    }),
  );
  return new Response(body, {
    status: res.status,
    statusText: res.statusText,
    headers: res.headers,
  });
}

function stdioOf(t: Transport | null): ChildStdioTransport | null {
  return t && "garbageCount" in t ? (t as ChildStdioTransport) : null;
}

/** A workspace server as the consent store keys it; the operator sees it redacted. */
function binding(
  workspace: string,
  name: string,
  def: ServerDefinition,
  digest: string,
): McpConsentBinding {
  return {
    subject: "mcp_server",
    workspace,
    name,
    definition: redactDefinition(def),
    digest,
  };
}

function agentServers(agent: AgentRecord): Record<string, ServerDefinition> {
  return (agent.mcp?.servers ?? {}) as Record<string, ServerDefinition>;
}

function startupTimeout(def: ServerDefinition): number {
  return def.startup_timeout_ms ?? DEFAULT_STARTUP_TIMEOUT_MS;
}

/** No wait after the first failure (a crash restarts at once), then 1 s doubling to 30 s. */
function backoffMs(failures: number): number {
  return failures <= 1 ? 0 : Math.min(MAX_BACKOFF_MS, 1_000 * 2 ** (failures - 2));
}

function clip(s: string, n = 500): string {
  return s.length > n ? s.slice(0, n) + "…" : s;
}

function resolve_(root: string, p: string): string {
  return resolve(root, p);
}

/**
 * The sandbox gives a server a private /tmp, which hides whatever the host keeps there. A
 * server whose own command line names a file under /tmp (a checkout or an unpacked package
 * there) sees that top-level directory read-only, so it can start.
 */
function underTmp(argv: readonly string[]): string[] {
  const dirs = new Set<string>();
  for (const a of argv) {
    if (!a.startsWith("/tmp/")) continue;
    const top = a.split("/").slice(0, 3).join("/");
    if (top.length > "/tmp/".length && existsSync(top)) dirs.add(top);
  }
  return [...dirs];
}
