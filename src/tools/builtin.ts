// The built-in tool catalog, in the order the model sees it.
import { ToolRegistry } from "./registry.ts";
import { execCommandTool } from "./command/exec-command.ts";
import { execCommandBatchTool } from "./command/exec-command-batch.ts";
import { applyPatchTool } from "./workspace/apply-patch.ts";
import { sleepTool } from "./agent/sleep.ts";

export function buildRegistry(): ToolRegistry {
  return new ToolRegistry()
    .register(execCommandTool)
    .register(execCommandBatchTool)
    .register(applyPatchTool)
    .register(sleepTool);
}
