// The built-in tool catalog, in the order the model sees it.
import { readFileSync } from "node:fs";
import { ToolRegistry, type ToolDefinition } from "./registry.ts";
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

const BUILTIN: readonly ToolDefinition<any>[] = [
  execCommandTool,
  execCommandBatchTool,
  applyPatchTool,
  useWorkspaceTool,
  sleepTool,
  spawnAgentTool,
  agentGetTool,
  taskListTool,
  taskStatusTool,
  taskOutputTool,
  taskStopTool,
  taskInputTool,
  createWorkItemTool,
  pickWorkItemTool,
  updateWorkItemTool,
  completeWorkItemTool,
  getWorkItemTool,
  listWorkItemsTool,
  memorySearchTool,
  memoryGetTool,
];

export function buildRegistry(): ToolRegistry {
  const built = builtParameters();
  const registry = new ToolRegistry();
  for (const def of BUILTIN) {
    const parameters = built?.[def.name];
    registry.register(parameters && !def.parameters ? { ...def, parameters } : def);
  }
  return registry;
}

/**
 * The JSON Schema of each tool's arguments as the build converted it from the zod schema
 * (scripts/bundle.mjs writes `dist/tools/parameters.json` beside this module's place in the
 * build), so a run from the build does not convert them before its first provider request.
 * A checkout has no such file: the turn converts the zod schemas at its first use.
 */
function builtParameters(): Record<string, Record<string, unknown>> | null {
  let text: string;
  try {
    text = readFileSync(new URL("./parameters.json", import.meta.url), "utf8");
  } catch {
    return null;
  }
  return JSON.parse(text) as Record<string, Record<string, unknown>>;
}
