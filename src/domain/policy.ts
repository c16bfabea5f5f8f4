// The shapes of the action leash as stored and sent on the wire: permission settings
// (mode and allow/ask/deny rule lists) and Claude-Code-shaped hook settings, at host level
// (config.json), agent level (the agent record) and workspace level (`.holon.json`).
// These are structural only; src/policy/ validates the rule and matcher syntax at set time.
import { z } from "zod";

export const PermissionMode = z.enum(["trusted", "ask", "read_only"]);
export type PermissionMode = z.infer<typeof PermissionMode>;

/** How a turn whose policy authority is external evidence runs (host level). */
export const ExternalEvidenceMode = z.enum(["ask", "read_only", "agent_mode"]);
export type ExternalEvidenceMode = z.infer<typeof ExternalEvidenceMode>;

export const MAX_RULES_PER_LIST = 500;
export const MAX_RULE_CHARS = 1_000;

const RuleList = z.array(z.string().min(1).max(MAX_RULE_CHARS)).max(MAX_RULES_PER_LIST);

export const PermissionSettings = z.strictObject({
  mode: PermissionMode.optional(),
  allow: RuleList.optional(),
  ask: RuleList.optional(),
  deny: RuleList.optional(),
});
export type PermissionSettings = z.infer<typeof PermissionSettings>;

export const HookEvent = z.enum([
  "SessionStart",
  "UserPromptSubmit",
  "PreToolUse",
  "PostToolUse",
  "Stop",
  "PreCompact",
  "Notification",
  "SubagentStop",
]);
export type HookEvent = z.infer<typeof HookEvent>;

export const MAX_HOOK_TIMEOUT_S = 3_600;

export const HookCommand = z.strictObject({
  type: z.literal("command"),
  command: z.string().min(1).max(8_192),
  /** Seconds; 60 when absent. */
  timeout: z.number().positive().max(MAX_HOOK_TIMEOUT_S).optional(),
});
export type HookCommand = z.infer<typeof HookCommand>;

export const HookMatcher = z.strictObject({
  /** A tool-name pattern (tool events only); absent, "" or "*" matches every tool. */
  matcher: z.string().max(1_000).optional(),
  hooks: z.array(HookCommand).min(1).max(32),
});
export type HookMatcher = z.infer<typeof HookMatcher>;

export const HookSettings = z.partialRecord(HookEvent, z.array(HookMatcher).max(64));
export type HookSettings = z.infer<typeof HookSettings>;
