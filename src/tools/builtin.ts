// The built-in tool catalog, in the order the model sees it.
import { ToolRegistry } from "./registry.ts";
import { execCommandTool } from "./command/exec-command.ts";
import { execCommandBatchTool } from "./command/exec-command-batch.ts";
import { applyPatchTool } from "./workspace/apply-patch.ts";
import { useWorkspaceTool } from "./workspace/use-workspace.ts";
import { sleepTool } from "./agent/sleep.ts";
import { spawnAgentTool } from "./agent/spawn-agent.ts";
import { agentGetTool } from "./agent/agent-get.ts";
import { taskListTool } from "./task/task-list.ts";
import { taskStatusTool } from "./task/task-status.ts";
import { taskOutputTool } from "./task/task-output.ts";
import { taskStopTool } from "./task/task-stop.ts";
import { taskInputTool } from "./task/task-input.ts";
import { createWorkItemTool } from "./work/create-work-item.ts";
import { pickWorkItemTool } from "./work/pick-work-item.ts";
import { updateWorkItemTool } from "./work/update-work-item.ts";
import { completeWorkItemTool } from "./work/complete-work-item.ts";
import { getWorkItemTool } from "./work/get-work-item.ts";
import { listWorkItemsTool } from "./work/list-work-items.ts";
import { memorySearchTool } from "./memory/memory-search.ts";
import { memoryGetTool } from "./memory/memory-get.ts";

export function buildRegistry(): ToolRegistry {
  return new ToolRegistry()
    .register(execCommandTool)
    .register(execCommandBatchTool)
    .register(applyPatchTool)
    .register(useWorkspaceTool)
    .register(sleepTool)
    .register(spawnAgentTool)
    .register(agentGetTool)
    .register(taskListTool)
    .register(taskStatusTool)
    .register(taskOutputTool)
    .register(taskStopTool)
    .register(taskInputTool)
    .register(createWorkItemTool)
    .register(pickWorkItemTool)
    .register(updateWorkItemTool)
    .register(completeWorkItemTool)
    .register(getWorkItemTool)
    .register(listWorkItemsTool)
    .register(memorySearchTool)
    .register(memoryGetTool);
}
