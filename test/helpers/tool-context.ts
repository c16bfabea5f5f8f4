// The context a tool call gets inside a turn, built for tests that dispatch tools directly
// against a real host: the agent's home as its execution root, the default output budget, and
// every plane's service from the host's composition root.
import type { QueuedMessage } from "../../src/domain/message.ts";
import type { RuntimeHost } from "../../src/host/host.ts";
import type { ToolContext } from "../../src/tools/registry.ts";

export async function toolContext(
  host: RuntimeHost,
  agentId = "main",
  runId = "run_test",
): Promise<ToolContext> {
  const agent = await host.agents.get(agentId);
  return {
    agent,
    run_id: runId,
    message: { id: `msg_${runId}` } as QueuedMessage,
    call_id: "call_test",
    execution_root: agent.agent_home,
    cwd: agent.agent_home,
    signal: new AbortController().signal,
    budget: { default_tokens: 8_000, max_tokens: 64_000 },
    tasks: host.tasks,
    services: {
      tasks: host.tasks,
      work: host.services.work,
      workspaces: host.services.workspaces,
      skills: host.services.skills,
      agents: host.services.agentPlane,
      memory: host.services.memoryIndex,
      mcp: host.services.mcp,
    },
  };
}
