// Host-level leash settings in config.json: `permissions` (mode, allow/ask/deny rules and how
// external evidence runs) and `hooks`. The schemas refine the structural shapes with the rule
// and matcher syntax, so a bad rule is refused at `holon config set` and a hand-edited file
// with one is a configuration error, never half-applied.
import { z } from "zod";
import {
  ExternalEvidenceMode,
  HookSettings,
  MAX_RULE_CHARS,
  PermissionMode,
  MAX_RULES_PER_LIST,
} from "../domain/policy.ts";
import { HolonError } from "../domain/errors.ts";
import { validateHookSettings } from "./hooks.ts";
import { parseRule } from "./rules.ts";

/** The built-in tool names a rule may name (kept in step with tools/builtin.ts by a test). */
export const BUILTIN_TOOL_NAMES: ReadonlySet<string> = new Set([
  "ExecCommand",
  "ExecCommandBatch",
  "TaskList",
  "TaskStatus",
  "TaskOutput",
  "TaskInput",
  "TaskStop",
  "ApplyPatch",
  "UseWorkspace",
  "SpawnAgent",
  "AgentGet",
  "Sleep",
  "CreateWorkItem",
  "GetWorkItem",
  "ListWorkItems",
  "PickWorkItem",
  "UpdateWorkItem",
  "CompleteWorkItem",
  "MemorySearch",
  "MemoryGet",
]);

export const RuleText = z
  .string()
  .min(1)
  .max(MAX_RULE_CHARS)
  .superRefine((text, ctx) => {
    try {
      parseRule(text, "host", BUILTIN_TOOL_NAMES);
    } catch (err) {
      ctx.addIssue({ code: "custom", message: (err as Error).message });
    }
  });

export const RuleListSchema = z.array(RuleText).max(MAX_RULES_PER_LIST);

export const HostPermissionsSchema = z.strictObject({
  mode: PermissionMode.optional(),
  allow: RuleListSchema.optional(),
  ask: RuleListSchema.optional(),
  deny: RuleListSchema.optional(),
  external_evidence_mode: ExternalEvidenceMode.optional(),
});

export const HostHooksSchema = HookSettings.superRefine((h, ctx) => {
  try {
    validateHookSettings(h);
  } catch (err) {
    ctx.addIssue({
      code: "custom",
      message: err instanceof HolonError ? err.message : String(err),
    });
  }
});
