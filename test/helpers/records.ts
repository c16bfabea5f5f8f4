// Records built directly, for store tests that need an agent row without a host.
import { AgentRecord, type AgentStatus } from "../../src/domain/agent.ts";

/** A public, self-owned agent of its own group; `count` is its total_message_count. */
export function agentRecord(
  id: string,
  count: number,
  status: AgentStatus = "awake_idle",
): AgentRecord {
  return AgentRecord.parse({
    agent_id: id,
    group_id: id,
    agent_home: `/tmp/agents/${id}`,
    kind: "default",
    visibility: "public",
    ownership: "self_owned",
    profile_preset: "public_named",
    status,
    created_at: "2026-11-27T12:00:00.000Z",
    updated_at: "2026-11-27T12:00:00.000Z",
    total_message_count: count,
    total_input_tokens: 0,
    total_output_tokens: 0,
    total_model_rounds: 0,
  });
}
