// The action leash: the one guard around every tool call (ToolGuard, consulted by the tool
// dispatch) and the hook points of a turn. For a call it runs the PreToolUse hooks, applies
// the rules of the host, the agent and the workspace under the mode the turn's taint
// allows, and then runs the call, refuses it with a tool error that says why, or hands it
// to the approval gate. Agent-level settings change only through `setAgentSetting`
// (a control route), each change recorded as an event.
//
// Hooks of the host and the agent are operator code and run; a hook entry in a workspace's
// `.holon.json` runs only once the operator approved that exact entry (consent.ts): until
// then it is skipped and an approval ask waits for the operator.
import type { AgentRecord } from "../domain/agent.ts";
import type { RunObserver } from "../agent/runtime.ts";
import { HolonError, unknownAgent } from "../domain/errors.ts";
import type { CatalogEvent, EventPayload } from "../domain/events.ts";
import type { AuthorityClass, QueuedMessage } from "../domain/message.ts";
import {
  ExternalEvidenceMode,
  HookSettings,
  type HookCommand,
  type HookMatcher,
  PermissionMode,
  PermissionSettings,
  type HookEvent,
} from "../domain/policy.ts";
import type { ExecutionSnapshot } from "../domain/workspace.ts";
import type { SandboxLaunch } from "../sandbox/profile.ts";
import type { Store } from "../store/db.ts";
import { errorResult, type CanonicalToolResult } from "../tools/envelope.ts";
import type { GuardDecision, ToolContext, ToolDefinition, ToolGuard } from "../tools/registry.ts";
import { parsePatch } from "../tools/workspace/apply-patch-parse.ts";
import { executionBinding } from "../workspace/roots.ts";
import { digestOf, type ApprovalGate, type ApprovedCall } from "./approval.ts";
import type { ConsentRegistry } from "./consent.ts";
import {
  clip,
  matchingHooks,
  readVerdict,
  runHook,
  validateHookSettings,
  type HookOutcome,
} from "./hooks.ts";
import {
  callPath,
  effectivePolicy,
  evaluate,
  validatePermissionSettings,
  type CallSubject,
  type EffectivePolicy,
  type MatchContext,
  type PolicyLayer,
  type Verdict,
} from "./rules.ts";
import { loadShellParser } from "./shell.ts";
import { modeFor, turnAuthority } from "./taint.ts";
import { readWorkspaceSettings, type WorkspaceSettings } from "./workspace-config.ts";

/** Host-level leash settings, from config.json. */
export type HostLeashSettings = {
  permissions: PermissionSettings;
  external_evidence_mode: ExternalEvidenceMode;
  hooks: HookSettings;
};

export type LeashDeps = {
  store: Store;
  /** The tool catalog's names (rules naming other tools are refused). */
  knownTools: () => ReadonlySet<string>;
  host: () => HostLeashSettings;
  gate: ApprovalGate;
  /** Operator consent to workspace hook entries; without it no workspace hook runs. */
  consent?: ConsentRegistry;
  /** The scrubbed command environment hooks start from (tasks/env.ts). */
  env: () => Promise<Record<string, string>>;
  snapshot: (agent: AgentRecord) => ExecutionSnapshot;
  /** Admits the one runtime follow-up a blocking Stop hook asks for. */
  admitFollowup: (agent: AgentRecord, text: string, authority: AuthorityClass) => Promise<void>;
  /** Whether the sandbox confines this agent's commands (src/sandbox/). */
  sandboxEnforced: (agent: AgentRecord) => boolean;
  /**
   * How this agent's commands in `root` start confined (null: unconfined; throws when the
   * sandbox is required and cannot confine). Workspace hooks start the same way.
   */
  confine?: (agent: AgentRecord, root: string) => SandboxLaunch | null;
};

/** Keys `holon agent set` accepts, and how each value is read. */
export const AGENT_SETTING_KEYS = [
  "permissions.mode",
  "permissions.allow",
  "permissions.ask",
  "permissions.deny",
  "hooks",
] as const;
export type AgentSettingKey = (typeof AGENT_SETTING_KEYS)[number];

export class ActionLeash implements ToolGuard {
  private readonly deps: LeashDeps;

  constructor(deps: LeashDeps) {
    this.deps = deps;
  }

  // -------------------------------------------------------------------------------------
  // Settings

  /** Validate and store one agent-level setting; `null` clears it. Nothing is stored on error. */
  async setAgentSetting(agentId: string, key: string, value: unknown): Promise<AgentRecord> {
    if (!(AGENT_SETTING_KEYS as readonly string[]).includes(key)) {
      throw new HolonError("unknown_setting", `no agent setting named ${JSON.stringify(key)}`, {
        status: 400,
        hint: `settable keys: ${AGENT_SETTING_KEYS.join(", ")}`,
      });
    }
    const store = this.deps.store;
    const current = await store.agents.get(agentId);
    if (!current) throw unknownAgent(agentId);
    const next: AgentRecord = { ...current };
    let previous: unknown;
    if (key === "hooks") {
      previous = current.hooks ?? null;
      if (value === null) delete next.hooks;
      else {
        const hooks = parseSetting(HookSettings, value, key);
        validateHookSettings(hooks);
        next.hooks = hooks;
      }
    } else {
      const field = key.slice("permissions.".length) as "mode" | "allow" | "ask" | "deny";
      const perms: PermissionSettings = { ...(current.permissions ?? {}) };
      previous = perms[field] ?? null;
      if (value === null) delete perms[field];
      else if (field === "mode") perms.mode = parseSetting(PermissionMode, value, key);
      else perms[field] = parseSetting(PermissionSettings.shape[field], value, key) ?? [];
      validatePermissionSettings(perms, "agent", this.deps.knownTools());
      if (Object.keys(perms).length) next.permissions = perms;
      else delete next.permissions;
    }
    next.updated_at = store.clock.now().toISOString();
    return await store.tx(async () => {
      await store.agents.put(next);
      await store.appendEvent(agentId, {
        type: "agent_setting_changed",
        payload: { key, previous: previous ?? null, value: value ?? null },
      });
      return next;
    });
  }

  /** The leash as `holon status` shows it. */
  async status(agent: AgentRecord) {
    const { execution_root: root } = executionBinding(agent);
    const { policy, ws } = this.policyFor(agent, root);
    const host = this.deps.host();
    const sandboxed = this.deps.sandboxEnforced(agent);
    const count = (h: HookSettings | undefined) =>
      Object.values(h ?? {}).reduce((n, l) => n + (l?.length ?? 0), 0);
    return {
      mode: policy.mode,
      external_evidence_mode: host.external_evidence_mode,
      // Unconfined, a command can reach the host's control surfaces and approve its own
      // ask: a restrictive mode then bounds a mistaken model, not a hostile one.
      sandbox_enforced: sandboxed,
      advisory: policy.mode !== "trusted" && !sandboxed,
      rules: { allow: policy.allow.length, ask: policy.ask.length, deny: policy.deny.length },
      rules_digest: policy.digest,
      hooks: { host: count(host.hooks), agent: count(agent.hooks) },
      workspace: {
        config_path: ws.path,
        error: ws.error,
        ignored_allow_rules: policy.ignored,
        hooks_awaiting_approval:
          ws.pending_hooks - (await this.workspaceHooks(agent, root, false)).count,
      },
    };
  }

  /** The last effective policy per agent, reused while none of its three levels changed. */
  private readonly policies = new Map<
    string,
    { host: object; agent: object | undefined; ws: WorkspaceSettings; policy: EffectivePolicy }
  >();

  private policyFor(
    agent: AgentRecord,
    root: string,
  ): { policy: EffectivePolicy; ws: WorkspaceSettings } {
    const ws = readWorkspaceSettings(root);
    const host = this.deps.host().permissions;
    const hit = this.policies.get(agent.agent_id);
    if (hit && hit.host === host && hit.agent === agent.permissions && hit.ws === ws) {
      return { policy: hit.policy, ws };
    }
    const layers: PolicyLayer[] = [
      { source: "host", settings: host },
      { source: "agent", settings: agent.permissions ?? {} },
    ];
    if (ws.permissions) layers.push({ source: "workspace", settings: ws.permissions });
    const policy = effectivePolicy(layers, this.deps.knownTools());
    if (this.policies.size > 1_000) this.policies.clear();
    this.policies.set(agent.agent_id, { host, agent: agent.permissions, ws, policy });
    return { policy, ws };
  }

  /** Approved workspace hooks per workspace file state and consent version. */
  private readonly wsHooks = new Map<
    string,
    { ws: WorkspaceSettings; version: number; hooks: HookSettings | undefined; count: number }
  >();

  /**
   * The hook entries of the workspace's `.holon.json` the operator approved. An entry not yet
   * decided is left out and, when `ask` is set, its approval ask opened (once per definition).
   */
  private async workspaceHooks(
    agent: AgentRecord,
    root: string,
    ask = true,
  ): Promise<{ hooks: HookSettings | undefined; count: number }> {
    const ws = readWorkspaceSettings(root);
    const consent = this.deps.consent;
    if (!ws.hooks || !consent) return { hooks: undefined, count: 0 };
    const hit = this.wsHooks.get(root);
    if (hit && hit.ws === ws && hit.version === consent.version && ask) return hit;
    const approved: HookSettings = {};
    let count = 0;
    for (const [event, entries] of Object.entries(ws.hooks) as [HookEvent, HookMatcher[]][]) {
      for (const [i, entry] of entries.entries()) {
        const binding = {
          subject: "workspace_hook" as const,
          workspace: root,
          name: `${event}[${i}]`,
          definition: entry,
        };
        const c = await (ask
          ? await consent.check(agent.agent_id, binding)
          : await consent.peek(binding));
        if (c.state !== "granted") continue;
        try {
          validateHookSettings({ [event]: [entry] });
        } catch {
          continue; // an approved entry whose matcher does not compile cannot run
        }
        (approved[event] ??= []).push(entry);
        count++;
      }
    }
    const value = { ws, version: consent.version, hooks: count ? approved : undefined, count };
    if (ask) {
      if (this.wsHooks.size > 256) this.wsHooks.clear();
      this.wsHooks.set(root, value);
    }
    return value;
  }

  /**
   * The hooks of `event` in order: the host's and the agent's (operator code, run as the
   * operator), then the workspace's approved entries, which start confined like the agent's
   * commands. A workspace hook that must be confined and cannot be fails when it runs.
   */
  private async hooksFor(
    agent: AgentRecord,
    root: string,
    event: HookEvent,
    subject?: string,
  ): Promise<{ hook: HookCommand; wrap: ((inner: string[]) => string[]) | undefined }[]> {
    const operator = matchingHooks([this.deps.host().hooks, agent.hooks], event, subject).map(
      (hook) => ({ hook, wrap: undefined }),
    );
    const ws = (await this.workspaceHooks(agent, root)).hooks;
    if (!ws) return operator;
    const found = matchingHooks([ws], event, subject);
    if (found.length === 0) return operator;
    const confine = this.deps.confine;
    const wrap = (inner: string[]): string[] => {
      const launch = confine?.(agent, root) ?? null;
      return launch ? launch.argv(inner, { writable: [], tty: false, statusFd: null }) : inner;
    };
    return [...operator, ...found.map((hook) => ({ hook, wrap }))];
  }

  /**
   * Whether a Stop hook would run at the end of this agent's turn. Without one, nothing runs
   * between the turn's terminal record and the run's settle, which then commit together.
   */
  async hasStopHooks(agent: AgentRecord): Promise<boolean> {
    return (await this.hooksFor(agent, executionBinding(agent).execution_root, "Stop")).length > 0;
  }

  /** The round's calls are done: the ones that need approval become one ask. */
  async roundEnded(runId: string): Promise<void> {
    await this.deps.gate.flush?.(runId);
  }

  /**
   * Notification hooks hear of every ask opened (an approval, a consent, a question, a halt,
   * a budget stop), after its commit; they run on their own and fail open.
   */
  readonly onEvents = (events: readonly CatalogEvent[]): Promise<void> | undefined =>
    // Every commit passes here; only one that opened an ask costs an async call.
    events.some((e) => e.type === "ask_opened") ? this.notifyAsks(events) : undefined;

  private async notifyAsks(events: readonly CatalogEvent[]): Promise<void> {
    for (const e of events) {
      if (e.type !== "ask_opened") continue;
      const ask = e.payload.ask;
      const agent = await this.deps.store.agents.get(ask.agent_id);
      if (!agent) continue;
      const host = this.deps.host().hooks;
      const root = executionBinding(agent).execution_root;
      if (!host?.Notification && !agent.hooks?.Notification && !readWorkspaceSettings(root).hooks)
        continue;
      setImmediate(() => {
        const cwd = executionBinding(agent).cwd;
        void this.fire(
          agent,
          "Notification",
          {
            session_id: agent.agent_id,
            transcript_path: null,
            cwd,
            agent_id: agent.agent_id,
            message: `${ask.kind} ask ${ask.id} is waiting for the operator: ${ask.about}`,
            ask_id: ask.id,
            ask_kind: ask.kind,
          },
          cwd,
        );
      });
    }
  }

  /** Calls the operator approved for this agent, to run once at the start of its turn. */
  async approvedCalls(agent: AgentRecord): Promise<ApprovedCall[]> {
    return (
      (await this.deps.gate.approved?.(agent.agent_id, {
        rulesDigest: (ctx) => this.policyFor(ctx.agent, ctx.execution_root).policy.digest,
        after: async (def, input, canonical, ctx) => await this.after(def, input, canonical, ctx),
      })) ?? []
    );
  }

  // -------------------------------------------------------------------------------------
  // Tool calls

  async before(def: ToolDefinition, input: unknown, ctx: ToolContext): Promise<GuardDecision> {
    const agent = ctx.agent;
    const { policy } = this.policyFor(agent, ctx.execution_root);
    const host = this.deps.host();
    const authority = ctx.policy_authority ?? ctx.message.authority_class;
    const mode = modeFor(policy.mode, authority, host.external_evidence_mode);
    const hooks = await this.hooksFor(agent, ctx.execution_root, "PreToolUse", def.name);
    // The common case costs nothing: trusted, no rules, no hooks.
    if (hooks.length === 0 && mode === "trusted" && policy.deny.length + policy.ask.length === 0) {
      return { kind: "run", input, context: null };
    }

    let hookAsk: string | null = null;
    let hookAllow = false;
    const contexts: string[] = [];
    for (const { hook, wrap } of hooks) {
      const outcome = await runHook(
        hook,
        this.toolHookInput("PreToolUse", def.name, input, ctx, mode),
        {
          cwd: ctx.cwd,
          env: await this.hookEnv(ctx),
          signal: ctx.signal,
          wrap,
        },
      );
      if (outcome.kind === "failed") {
        await this.recordHookFailure(agent.agent_id, ctx, "PreToolUse", hook.command, outcome);
        return this.denied(
          def.name,
          `a PreToolUse hook failed (${outcome.reason}: ${outcome.detail}), so the call is refused`,
          "hook_failed",
          ctx,
          {
            hook_command: clip(hook.command, 200),
          },
        );
      }
      if (outcome.kind === "blocked") {
        return this.denied(
          def.name,
          `blocked by a PreToolUse hook: ${outcome.reason}`,
          "hook_blocked",
          ctx,
        );
      }
      const v = readVerdict(outcome.json);
      if (v.decision === "deny" || v.decision === "block") {
        return this.denied(
          def.name,
          `blocked by a PreToolUse hook: ${v.reason ?? "no reason given"}`,
          "hook_blocked",
          ctx,
        );
      }
      if (v.updatedInput) {
        const parsed = def.input.safeParse(v.updatedInput);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          return this.denied(
            def.name,
            `a PreToolUse hook rewrote the input into one that breaks the tool schema (${issue?.path.join(".") || "input"}: ${issue?.message ?? "invalid"}), so the call is refused`,
            "invalid_hook_output",
            ctx,
          );
        }
        input = parsed.data;
      }
      if (v.decision === "ask") hookAsk = v.reason ?? "a PreToolUse hook asked for approval";
      if (v.decision === "allow") hookAllow = true;
      if (v.additionalContext) contexts.push(v.additionalContext);
    }

    // The rules see the final input: a hook cannot rewrite its way past them.
    await loadShellParser();
    const match: MatchContext = { root: ctx.execution_root, cwd: ctx.cwd };
    const verdict = evaluate(
      { ...policy, mode },
      def.name,
      this.subject(def.name, input, match, agent),
      match,
    );
    const context = contexts.length ? contexts.join("\n") : null;
    if (verdict.decision === "deny") {
      return this.denied(
        def.name,
        `${def.name} was not run: ${verdict.reason}`,
        "permission_denied",
        ctx,
        {
          rule: verdict.rule,
        },
        mode,
      );
    }
    const needsAsk = hookAsk !== null || (verdict.decision === "ask" && !hookAllow);
    if (!needsAsk) return { kind: "run", input, context };
    const canonical = await this.requestApproval(
      def.name,
      input,
      ctx,
      policy,
      mode,
      verdict,
      hookAsk,
      authority,
    );
    return { kind: "result", canonical };
  }

  async after(
    def: ToolDefinition,
    input: unknown,
    canonical: CanonicalToolResult,
    ctx: ToolContext,
  ): Promise<string | null> {
    const hooks = await this.hooksFor(ctx.agent, ctx.execution_root, "PostToolUse", def.name);
    if (hooks.length === 0) return null;
    const contexts: string[] = [];
    const payload = {
      ...this.toolHookInput("PostToolUse", def.name, input, ctx, null),
      tool_response: canonical,
    };
    for (const { hook, wrap } of hooks) {
      const outcome = await runHook(hook, payload, {
        cwd: ctx.cwd,
        env: await this.hookEnv(ctx),
        signal: ctx.signal,
        wrap,
      });
      if (outcome.kind === "failed") {
        await this.recordHookFailure(ctx.agent.agent_id, ctx, "PostToolUse", hook.command, outcome);
        continue;
      }
      if (outcome.kind === "blocked") contexts.push(outcome.reason);
      else {
        const v = readVerdict(outcome.json);
        if (v.decision === "block" && v.reason) contexts.push(v.reason);
        if (v.additionalContext) contexts.push(v.additionalContext);
      }
    }
    return contexts.length ? contexts.join("\n") : null;
  }

  private subject(
    tool: string,
    input: unknown,
    ctx: MatchContext,
    agent: AgentRecord,
  ): CallSubject {
    const i = (input ?? {}) as Record<string, unknown>;
    switch (tool) {
      case "ExecCommand":
        return { kind: "shell", commands: [String(i.cmd ?? "")] };
      case "ExecCommandBatch":
        return {
          kind: "shell",
          commands: ((i.items as { cmd: string }[] | undefined) ?? []).map((x) => x.cmd),
        };
      case "ApplyPatch": {
        const parsed = parsePatch(String(i.patch ?? ""));
        if (!parsed.ok) return { kind: "paths", paths: [null] };
        const paths: string[] = [];
        for (const f of parsed.patch.files) {
          for (const p of [f.old_path, f.new_path]) if (p) paths.push(callPath(p, ctx));
        }
        return { kind: "paths", paths };
      }
      case "UseWorkspace": {
        if (typeof i.path === "string") return { kind: "paths", paths: [callPath(i.path, ctx)] };
        if (i.workspace_id === "agent_home") return { kind: "paths", paths: [agent.agent_home] };
        return { kind: "paths", paths: [null] };
      }
      default:
        return { kind: "plain" };
    }
  }

  private denied(
    tool: string,
    message: string,
    kind: string,
    ctx: ToolContext,
    details: Record<string, unknown> = {},
    mode?: PermissionMode,
  ): GuardDecision {
    return {
      kind: "result",
      canonical: errorResult(tool, {
        kind,
        message,
        details: {
          ...details,
          policy_authority: ctx.policy_authority ?? ctx.message.authority_class,
          ...(mode ? { effective_mode: mode } : {}),
        },
        recovery_hint:
          "do not retry the same call; choose an approach the rules allow, or tell the operator what you need and why",
        retryable: false,
      }),
    };
  }

  private async requestApproval(
    tool: string,
    input: unknown,
    ctx: ToolContext,
    policy: EffectivePolicy,
    mode: PermissionMode,
    verdict: Verdict,
    hookAsk: string | null,
    authority: AuthorityClass,
  ): Promise<CanonicalToolResult> {
    const m = ctx.message;
    let snapshot: ExecutionSnapshot | null = null;
    try {
      snapshot = this.deps.snapshot(ctx.agent);
    } catch {
      snapshot = null;
    }
    const result = await this.deps.gate.request({
      agent_id: ctx.agent.agent_id,
      run_id: ctx.run_id,
      message_id: m.id,
      call_id: ctx.call_id,
      tool_name: tool,
      input,
      input_digest: digestOf(input),
      execution_root: ctx.execution_root,
      cwd: ctx.cwd,
      workspace: {
        workspace_id: snapshot?.workspace_id ?? null,
        workspace_anchor: snapshot?.workspace_anchor ?? null,
      },
      policy: {
        mode: policy.mode,
        effective_mode: mode,
        rules_digest: policy.digest,
        verdict:
          hookAsk && verdict.decision !== "ask"
            ? { decision: "ask", reason: `needs approval: ${hookAsk}`, rule: null }
            : verdict,
        hook_reason: hookAsk,
      },
      execution_snapshot: snapshot,
      trigger: {
        policy_authority: authority,
        authority_class: m.authority_class,
        message_kind: m.kind,
        origin: m.origin,
        delivery_surface: m.delivery_surface ?? null,
        admission_context: m.admission_context ?? null,
      },
    });
    return result;
  }

  private toolHookInput(
    event: HookEvent,
    tool: string,
    input: unknown,
    ctx: ToolContext,
    mode: PermissionMode | null,
  ): Record<string, unknown> {
    const toolInput: Record<string, unknown> = { ...((input ?? {}) as Record<string, unknown>) };
    if (tool === "ExecCommand") toolInput.command = toolInput.cmd;
    if (tool === "ExecCommandBatch" && Array.isArray(toolInput.items)) {
      const items = (toolInput.items as Record<string, unknown>[]).map((it) => ({
        ...it,
        command: it.cmd,
      }));
      toolInput.items = items;
      toolInput.command = items.map((it) => String(it.command)).join("\n");
    }
    return {
      session_id: ctx.agent.agent_id,
      transcript_path: null,
      cwd: ctx.cwd,
      permission_mode: mode,
      hook_event_name: event,
      tool_name: tool,
      tool_input: toolInput,
      tool_use_id: ctx.call_id,
      agent_id: ctx.agent.agent_id,
      run_id: ctx.run_id,
      policy_authority: ctx.policy_authority ?? ctx.message.authority_class,
    };
  }

  private async hookEnv(ctx: {
    execution_root: string;
    agent: AgentRecord;
  }): Promise<Record<string, string>> {
    return {
      ...(await this.deps.env()),
      CLAUDE_PROJECT_DIR: ctx.execution_root,
      HOLON_AGENT_ID: ctx.agent.agent_id,
    };
  }

  private async recordHookFailure(
    agentId: string,
    ctx: { run_id: string } | null,
    event: HookEvent,
    command: string,
    outcome: Extract<HookOutcome, { kind: "failed" }>,
  ): Promise<void> {
    const payload: EventPayload<"hook_failed"> = {
      hook_event: event,
      command: clip(command, 200),
      reason: outcome.reason,
      detail: clip(outcome.detail, 2_000),
      exit_code: outcome.exit_code,
      run_id: ctx?.run_id ?? null,
    };
    const store = this.deps.store;
    await store.tx(async () => await store.appendEvent(agentId, { type: "hook_failed", payload }));
  }

  // -------------------------------------------------------------------------------------
  // Turn hooks: SessionStart, UserPromptSubmit, Stop, SubagentStop (fail open)

  /** The policy authority of a turn consuming `message` (taint.ts), from stored records. */
  async turnAuthority(agent: AgentRecord, message: QueuedMessage): Promise<AuthorityClass> {
    const item = message.work_item_id
      ? await this.deps.store.workItems.get(message.work_item_id)
      : undefined;
    return turnAuthority(message, {
      workItem: item?.policy_authority,
      agentFloor: agent.policy_authority_floor,
      sleepCarry: agent.policy_authority_carry,
    });
  }

  /**
   * Record what the turn's authority means for the agent: an operator instruction clears a
   * spawn floor (re-confirmation); every turn leaves its authority for the sleep it may ask for.
   */
  async noteTurnAuthority(
    agentId: string,
    message: QueuedMessage,
    authority: AuthorityClass,
  ): Promise<void> {
    const store = this.deps.store;
    const agent = await store.agents.get(agentId);
    if (!agent) return;
    const clearFloor =
      message.authority_class === "operator_instruction" && agent.policy_authority_floor;
    if (!clearFloor && agent.policy_authority_carry === authority) return;
    const next: AgentRecord = { ...agent, policy_authority_carry: authority };
    if (clearFloor) delete next.policy_authority_floor;
    await store.tx(async () => await store.agents.put(next));
  }

  /** SessionStart and, for operator prompts, UserPromptSubmit. */
  async turnStart(
    agent: AgentRecord,
    message: QueuedMessage,
    runId: string,
    prompt: string,
  ): Promise<{ context: string[]; blocked: string | null }> {
    const cwd = executionBinding(agent).cwd;
    const out = { context: [] as string[], blocked: null as string | null };
    const base = {
      session_id: agent.agent_id,
      transcript_path: null,
      cwd,
      agent_id: agent.agent_id,
      run_id: runId,
    };
    const start = await this.fire(
      agent,
      "SessionStart",
      { ...base, source: "wake", message_kind: message.kind },
      cwd,
    );
    out.context.push(...start.context);
    if (message.kind === "operator_prompt") {
      const r = await this.fire(agent, "UserPromptSubmit", { ...base, prompt }, cwd);
      out.context.push(...r.context);
      out.blocked = r.blocked;
    }
    return out;
  }

  /** Stop: a blocking hook admits one runtime follow-up (never for a follow-up itself). */
  async turnStop(
    agent: AgentRecord,
    message: QueuedMessage,
    runId: string,
    authority: AuthorityClass,
  ): Promise<void> {
    const cwd = executionBinding(agent).cwd;
    const active = message.metadata?.stop_hook_followup === true;
    const r = await this.fire(
      agent,
      "Stop",
      {
        session_id: agent.agent_id,
        transcript_path: null,
        cwd,
        agent_id: agent.agent_id,
        run_id: runId,
        stop_hook_active: active,
      },
      cwd,
    );
    if (r.blocked && !active) await this.deps.admitFollowup(agent, r.blocked, authority);
  }

  /**
   * A run observer that fires SubagentStop on the supervisor when a private child settles
   * (completed or failed). The hooks run after the settling transaction, never inside it.
   */
  subagentObserver(): RunObserver {
    return {
      onClosure: async (run) => {
        if (run.closure.outcome !== "completed" && run.closure.outcome !== "failed") return;
        const store = this.deps.store;
        const child = await store.agents.get(run.agent_id);
        const parentId = child?.supervisor_agent_id;
        const parent = parentId ? await store.agents.get(parentId) : undefined;
        if (!child || !parent) return;
        if (matchingHooks([this.deps.host().hooks, parent.hooks], "SubagentStop").length === 0)
          return;
        setImmediate(() => void this.subagentStop(parent, child.agent_id));
      },
    };
  }

  /** SubagentStop, on the supervisor's hooks, when a child settles. */
  async subagentStop(parent: AgentRecord, childId: string): Promise<void> {
    const cwd = executionBinding(parent).cwd;
    await this.fire(
      parent,
      "SubagentStop",
      {
        session_id: parent.agent_id,
        transcript_path: null,
        cwd,
        agent_id: parent.agent_id,
        child_agent_id: childId,
        stop_hook_active: false,
      },
      cwd,
    );
  }

  /**
   * PreCompact, before a compaction replaces older rounds of a turn with a recap. Holon
   * compacts on its own (`trigger: "auto"`, the value a matcher sees); the hooks cannot stop
   * it (as in Claude Code) and fail open.
   */
  async preCompact(
    agent: AgentRecord,
    info: { run_id: string; round: number; kind: string },
  ): Promise<void> {
    const cwd = executionBinding(agent).cwd;
    await this.fire(
      agent,
      "PreCompact",
      {
        session_id: agent.agent_id,
        transcript_path: null,
        cwd,
        agent_id: agent.agent_id,
        run_id: info.run_id,
        round: info.round,
        trigger: "auto",
        custom_instructions: null,
        compaction: info.kind,
      },
      cwd,
      "auto",
    );
  }

  /** Run a non-tool event's hooks; failures are recorded and ignored (fail open). */
  private async fire(
    agent: AgentRecord,
    event: HookEvent,
    input: Record<string, unknown>,
    cwd: string,
    subject?: string,
  ): Promise<{ context: string[]; blocked: string | null }> {
    const out = { context: [] as string[], blocked: null as string | null };
    const root = executionBinding(agent).execution_root;
    const hooks = await this.hooksFor(agent, root, event, subject);
    if (hooks.length === 0) return out;
    for (const { hook, wrap } of hooks) {
      const outcome = await runHook(
        hook,
        { ...input, hook_event_name: event },
        {
          cwd,
          env: await this.hookEnv({ execution_root: root, agent }),
          wrap,
        },
      );
      if (outcome.kind === "failed") {
        await this.recordHookFailure(
          agent.agent_id,
          typeof input.run_id === "string" ? { run_id: input.run_id } : null,
          event,
          hook.command,
          outcome,
        );
        continue;
      }
      if (outcome.kind === "blocked") {
        out.blocked ??= outcome.reason;
        continue;
      }
      const v = readVerdict(outcome.json);
      if (v.decision === "block") out.blocked ??= v.reason ?? `blocked by a ${event} hook`;
      if (v.additionalContext) out.context.push(v.additionalContext);
      else if (outcome.text && (event === "SessionStart" || event === "UserPromptSubmit")) {
        out.context.push(outcome.text);
      }
    }
    return out;
  }
}

function parseSetting<T>(
  schema: {
    safeParse(
      v: unknown,
    ):
      | { success: true; data: T }
      | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
  },
  value: unknown,
  key: string,
): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const at = issue?.path.length ? `${key}.${issue.path.map(String).join(".")}` : key;
  throw new HolonError("invalid_setting", `${at}: ${issue?.message ?? "invalid value"}`, {
    status: 400,
    hint: "see docs/guardrails.md for the shape of permissions and hooks",
  });
}
