// Agent identity, lifecycle status and the summaries the inspection surfaces return.
import { z } from "zod";
import { ClosureDecision, ContinuationResolution } from "./closure.ts";
import { ActiveWorkspaceEntry, WorktreeSession } from "./workspace.ts";
import { WakeHint } from "./waiting.ts";
import { AgentSandboxSettings } from "./sandbox.ts";
import { AuthorityClass } from "./message.ts";
import { HookSettings, PermissionSettings } from "./policy.ts";
import { AgentBudgets, BudgetHold, BudgetReservation } from "./budget.ts";

export const AgentStatus = z.enum([
  "booting",
  "awake_idle",
  "awake_running",
  "awaiting_task",
  "asleep",
  "paused",
  "stopped",
]);
export type AgentStatus = z.infer<typeof AgentStatus>;

export const AgentKind = z.enum(["default", "named", "child"]);
export type AgentKind = z.infer<typeof AgentKind>;
export const AgentVisibility = z.enum(["public", "private"]);
export type AgentVisibility = z.infer<typeof AgentVisibility>;
export const AgentOwnership = z.enum(["self_owned", "parent_supervised"]);
export type AgentOwnership = z.infer<typeof AgentOwnership>;
export const ProfilePreset = z.enum(["public_named", "private_child"]);
export type ProfilePreset = z.infer<typeof ProfilePreset>;

/**
 * Agent ids appear in paths and URLs, so they are deliberately plain, and lower case: two
 * ids differing only by case (`Main`, `main`) would name one directory on a case-insensitive
 * file system.
 */
export const AgentId = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{0,63}$/,
    "agent ids are 1-64 characters of lower-case letters, digits, '.', '_' or '-', starting with a letter or digit",
  );

export const TokenTotals = z.object({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  total_tokens: z.number().int(),
});
export type TokenTotals = z.infer<typeof TokenTotals>;

/** The durable per-agent record. Status changes are written with the event that explains them. */
export const AgentRecord = z.object({
  agent_id: z.string(),
  agent_home: z.string(),
  kind: AgentKind,
  visibility: AgentVisibility,
  ownership: AgentOwnership,
  profile_preset: ProfilePreset,
  lineage_parent_agent_id: z.string().optional(),
  /**
   * The agent's group: the root of its supervision chain, set at creation and never changed.
   * A private child is in its supervisor's group; every other agent is its own root. A host
   * recovers and runs agents a group at a time (host.ts `acquire`).
   */
  group_id: z.string(),
  status: AgentStatus,
  created_at: z.string(),
  updated_at: z.string(),
  current_run_id: z.string().optional(),
  sleeping_until: z.string().optional(),
  last_wake_reason: z.string().optional(),
  last_brief_at: z.string().optional(),
  model_override: z.string().optional(),
  /** Legacy binding (older records); the active workspace entry replaces it. */
  workspace_root: z.string().optional(),
  cwd: z.string().optional(),
  /** Where the agent works (workspace/registry.ts); absent means the agent_home fallback. */
  active_workspace: ActiveWorkspaceEntry.optional(),
  worktree_session: WorktreeSession.optional(),
  total_message_count: z.number().int(),
  total_input_tokens: z.number().int(),
  total_output_tokens: z.number().int(),
  total_model_rounds: z.number().int(),
  last_turn_token_usage: z.record(z.string(), z.unknown()).optional(),
  last_failure: z
    .object({ occurred_at: z.string(), summary: z.string(), phase: z.string() })
    .optional(),
  /** The agent's focus: the open work item it is advancing (work plane). */
  current_work_item_id: z.string().optional(),
  /** The closure derived when the last turn settled. */
  closure: ClosureDecision.optional(),
  /** How the last dequeued trigger related to the closure before it. */
  last_continuation: ContinuationResolution.optional(),
  /** A wake hint that arrived while the agent could not take it (waiting plane). */
  pending_wake_hint: WakeHint.optional(),
  /** The agent that supervises this one (private children: their parent). */
  supervisor_agent_id: z.string().optional(),
  /** How deep in a spawn tree the agent sits (root agents 0, their children 1). */
  spawn_depth: z.number().int().optional(),
  /** Set when the agent was archived: stopped, kept, hidden from lists. */
  archived_at: z.string().optional(),
  /** The agent's own sandbox settings (changed only through control routes). */
  sandbox: AgentSandboxSettings.optional(),
  /** When the host first ran this agent with the sandbox (the `sandbox_enabled` event). */
  sandbox_enabled_at: z.string().optional(),
  /** Agent-level permission mode and rules (`holon agent set`; src/policy/). */
  permissions: PermissionSettings.optional(),
  /** Agent-level hooks (`holon agent set <id> hooks …`). */
  hooks: HookSettings.optional(),
  /**
   * The agent's own MCP servers (`holon agent set <id> mcp.servers.<name> …`), each checked
   * by src/mcp/config.ts when it is set; changed only through control routes.
   */
  mcp: z.object({ servers: z.record(z.string(), z.record(z.string(), z.unknown())) }).optional(),
  /**
   * Taint: the lowest authority every turn of this agent runs under, set when a tainted turn
   * spawned it; an operator instruction to the agent clears it.
   */
  policy_authority_floor: AuthorityClass.optional(),
  /** The policy authority of the agent's last turn, inherited by the sleep wake it asked for. */
  policy_authority_carry: AuthorityClass.optional(),
  /** The agent's budgets (src/budget/); changed only through control routes. */
  budgets: AgentBudgets.optional(),
  /** A child's budget carved from its parent's remainder (SpawnAgent `budget`). */
  budget_reservation: BudgetReservation.optional(),
  /** Set while a budget stops the agent before its next provider call (or a freeze). */
  budget_hold: BudgetHold.optional(),
  /** The parent's work item when this child was spawned (the ledger's work item chain). */
  spawn_work_item_id: z.string().optional(),
});
export type AgentRecord = z.infer<typeof AgentRecord>;

export type LifecycleHint = {
  resume_required: boolean;
  message: string;
  resume_command?: string;
};

/**
 * The temporary agent of a `holon run` without `--agent`: private, no parent, id `run-…`.
 * When its run ends it is stopped (reason `run_finished`) and kept for inspection;
 * `holon run --resume <id>` continues it.
 */
export function isRunAgent(a: Pick<AgentRecord, "agent_id" | "visibility">): boolean {
  return a.visibility === "private" && a.agent_id.startsWith("run-");
}

/**
 * A run agent whose run finished: stopped, no run in flight. A host start does no per-agent
 * work for it (home layout, patch journals, restart recovery) until its loop starts again,
 * so start-up does not grow with every past `holon run`.
 */
export function isDormantRunAgent(
  a: Pick<AgentRecord, "agent_id" | "visibility" | "status" | "current_run_id">,
): boolean {
  return isRunAgent(a) && a.status === "stopped" && !a.current_run_id;
}

export function lifecycleHint(
  agentId: string,
  status: AgentStatus,
  opts: { runAgent?: boolean } = {},
): LifecycleHint {
  switch (status) {
    case "stopped":
      if (opts.runAgent) {
        return {
          resume_required: true,
          message:
            "The run this temporary agent was made for has finished; it is kept for inspection until retention or deletion removes it.",
          resume_command: `holon run --resume ${agentId} "<prompt>"`,
        };
      }
      return {
        resume_required: true,
        message:
          "Agent is stopped: new prompts are rejected and wake does not cross the stopped boundary. Resume it first.",
        resume_command: `holon agent start ${agentId}`,
      };
    case "paused":
      return {
        resume_required: true,
        message: "Agent is paused: messages are queued but not processed until it is resumed.",
        resume_command: `holon agent start ${agentId}`,
      };
    default:
      return { resume_required: false, message: statusMessage(status) };
  }
}

function statusMessage(status: AgentStatus): string {
  switch (status) {
    case "booting":
      return "Agent is starting up.";
    case "awake_idle":
      return "Agent is awake and ready for work.";
    case "awake_running":
      return "Agent is working on a message.";
    case "awaiting_task":
      return "Agent is waiting on a task result.";
    case "asleep":
      return "Agent is asleep and wakes on the next message.";
    default:
      return status;
  }
}

/** `GET /agents/list` entry: small enough for selection UIs. */
export type AgentListEntry = {
  agent_id: string;
  kind: AgentKind;
  visibility: AgentVisibility;
  ownership: AgentOwnership;
  status: AgentStatus;
  pending: number;
  is_default: boolean;
  lineage_parent_agent_id: string | null;
  group_id: string;
  archived: boolean;
};
