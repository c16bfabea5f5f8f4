// SpawnAgent: the one way a model creates another reasoning context. A private child comes
// back with its supervision task (a child_agent_task the task tools drive); a public named
// agent comes back as an agent_id only. The agent plane (tasks/children.ts) does the work.
import { z } from "zod";
import { AgentId } from "../../domain/agent.ts";
import { MAX_INITIAL_MESSAGE_CHARS } from "../../tasks/children.ts";
import { describe, type ToolDefinition } from "../registry.ts";

const Input = z.strictObject({
  preset: z
    .enum(["private_child", "public_named"])
    .optional()
    .describe(
      "private_child (default): a supervised child for a bounded job; public_named: a long-lived public agent.",
    ),
  initial_message: z
    .string()
    .max(MAX_INITIAL_MESSAGE_CHARS)
    .optional()
    .describe("The job for the new agent (required for private_child)."),
  agent_id: AgentId.optional().describe("The new agent's id (public_named only)."),
  workspace_mode: z
    .enum(["inherit", "worktree"])
    .optional()
    .describe("inherit (default): share your workspace; worktree: a private git worktree of it."),
  context: z
    .enum(["fresh", "fork"])
    .optional()
    .describe("fresh (default): only initial_message; fork: also a view of your active work item."),
  template: z
    .string()
    .max(2048)
    .optional()
    .describe("Template for the new agent's AGENTS.md and skills: id, absolute path or tree URL."),
  budget: z
    .strictObject({
      tokens: z.number().int().min(1).max(1e12).optional(),
      usd: z.number().positive().max(1e6).optional(),
      rounds: z.number().int().min(1).max(1e9).optional(),
      time_ms: z.number().int().min(1).max(1e12).optional(),
    })
    .optional()
    .describe(
      "private_child only: a budget carved from what you have left (tokens, usd, rounds, time_ms); without it the child shares your remainder.",
    ),
});

export const spawnAgentTool: ToolDefinition<typeof Input> = {
  name: "SpawnAgent",
  family: "agent",
  description: describe(import.meta.url, "./spawn-agent.md"),
  input: Input,
  async execute(input, ctx) {
    const r = await ctx.services.agents.spawn({
      parent_agent_id: ctx.agent.agent_id,
      preset: input.preset ?? "private_child",
      initial_message: input.initial_message,
      agent_id: input.agent_id,
      workspace_mode: input.workspace_mode ?? "inherit",
      context_mode: input.context ?? "fresh",
      template: input.template,
      parent_message_id: ctx.message.id,
      policy_authority: ctx.policy_authority,
      budget: input.budget,
    });
    const summary =
      "supervision_task_id" in r
        ? `spawned private child ${r.child_agent_id}; supervise it through task ${r.supervision_task_id}`
        : `created public agent ${r.agent_id}`;
    return { summary_text: summary, result: r as unknown as Record<string, unknown> };
  },
  render(c) {
    const r = c.result as { agent_id: string; supervision_task_id?: string };
    if (!r.supervision_task_id) {
      return `Created public agent ${r.agent_id}. It runs on its own; inspect it with AgentGet.`;
    }
    return [
      `Spawned private child ${r.agent_id}.`,
      `Supervision task: ${r.supervision_task_id} (child_agent_task, running).`,
      "Its result comes back to you as a task result when it finishes. Meanwhile: TaskStatus for its state, TaskOutput for its reports, TaskInput to send it a follow-up, TaskStop to end it.",
    ].join("\n");
  },
};
