// AgentGet: the agent-plane inspection of one agent (the AgentGetResult envelope): identity
// with visibility, ownership, preset and lineage; status and closure; work focus; active
// tasks; children. Callers see themselves, their own children and public agents.
import { z } from "zod";
import { AgentId } from "../../domain/agent.ts";
import { HolonError } from "../../domain/errors.ts";
import { ToolFailure } from "../envelope.ts";
import { describe, type ToolDefinition } from "../registry.ts";

const Input = z.strictObject({
  agent_id: AgentId.optional().describe("The agent to inspect (default: yourself)."),
});

type Result = Awaited<ReturnType<import("../../tasks/children.ts").AgentPlane["get"]>>;

export const agentGetTool: ToolDefinition<typeof Input> = {
  name: "AgentGet",
  family: "agent",
  description: describe(import.meta.url, "./agent-get.md"),
  input: Input,
  async execute(input, ctx) {
    const id = input.agent_id ?? ctx.agent.agent_id;
    let r: Result;
    try {
      r = await ctx.services.agents.get(id, ctx.agent.agent_id);
    } catch (err) {
      if (err instanceof HolonError && err.kind === "unknown_agent") {
        throw new ToolFailure("unknown_agent", `no agent '${id}' that you can inspect`, {
          details: { agent_id: id, field: "agent_id" },
          recovery_hint: "you can inspect yourself, your own children and public agents",
        });
      }
      throw err;
    }
    return {
      summary_text: `agent ${id} is ${r.agent.status}`,
      result: r as unknown as Record<string, unknown>,
    };
  },
  render(c) {
    const a = (c.result as unknown as Result).agent;
    const i = a.identity;
    const lines = [
      `Agent ${i.agent_id} (${i.kind}, ${i.visibility}, ${i.ownership}, ${i.profile_preset})`,
      `Status: ${a.status}${a.closure ? `; last closure ${a.closure.outcome}${a.closure.waiting_reason ? ` (${a.closure.waiting_reason})` : ""}` : ""}`,
    ];
    if (i.lineage_parent_agent_id) lines.push(`Created by: ${i.lineage_parent_agent_id}`);
    if (a.current_work_item)
      lines.push(
        `Working on: ${a.current_work_item.work_item_id} ${a.current_work_item.objective}`,
      );
    lines.push(`Active tasks: ${a.active_tasks.length}`);
    for (const t of a.active_tasks)
      lines.push(`  - ${t.task_id} [${t.kind}, ${t.status}] ${t.summary ?? ""}`);
    lines.push(`Children: ${a.children.live} live of ${a.children.total}`);
    for (const ch of a.children.entries)
      lines.push(
        `  - ${ch.agent_id} [${ch.status}${ch.supervision_state ? `, task ${ch.supervision_state}` : ""}]`,
      );
    return lines.join("\n");
  },
};
