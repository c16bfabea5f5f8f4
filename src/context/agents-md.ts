// Instruction files: the agent's own AGENTS.md from its home, then the workspace's AGENTS.md
// (CLAUDE.md only when there is no AGENTS.md). Each is capped so one huge file cannot crowd
// out the rest of the prompt.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PromptContributor, PromptSection } from "./section.ts";
import { AGENT_HOME_WORKSPACE_ID } from "../domain/workspace.ts";
import { executionBinding } from "../workspace/roots.ts";

const MAX_INSTRUCTION_CHARS = 64_000;

function readInstructions(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, "utf8");
  return text.length > MAX_INSTRUCTION_CHARS ? text.slice(0, MAX_INSTRUCTION_CHARS) : text;
}

export const agentsMdContributor: PromptContributor = {
  id: "agents_md",
  contribute: ({ agent }) => {
    const sections: PromptSection[] = [];
    const agentPath = join(agent.agent_home, "AGENTS.md");
    const agentMd = readInstructions(agentPath);
    if (agentMd) {
      sections.push({
        placement: "system",
        text: `Agent instructions (from ${agentPath}):\n\n${agentMd}`,
        stability: "agent_scoped",
        loaded: [{ scope: "agent", path: agentPath, kind: "AGENTS.md" }],
      });
    }
    // Project guidance follows the workspace anchor, never a managed worktree or the shell cwd.
    const binding = executionBinding(agent);
    if (binding.workspace_id !== AGENT_HOME_WORKSPACE_ID) {
      for (const name of ["AGENTS.md", "CLAUDE.md"]) {
        const path = join(binding.workspace_anchor, name);
        const text = readInstructions(path);
        if (text === undefined) continue;
        sections.push({
          placement: "system",
          text: `Workspace instructions (from ${path}):\n\n${text}`,
          stability: "agent_scoped",
          loaded: [{ scope: "workspace", path, kind: name }],
        });
        break;
      }
    }
    const last = sections.at(-1);
    if (last) last.cache_breakpoint = true;
    return sections;
  },
};
