// The default prompt contributors, in the loading contract's order: runtime policy and mode
// guidance, agent then workspace instructions, tool guidance, then the turn's environment
// working memory with episodes, and the budgeted recent history. Planes add theirs here.
import { agentsMdContributor } from "./agents-md.ts";
import { environmentContributor } from "./environment.ts";
import { policyContributor } from "./policy.ts";
import { historyBudget, recentHistoryContributor } from "./recent-history.ts";
import { memoryBudget, workingMemoryContributor } from "./memory.ts";
import type { AgentRecord } from "../domain/agent.ts";
import type { PromptContributor } from "./section.ts";
import { toolsGuidanceContributor } from "./tools-guidance.ts";
import { workQueueContributor } from "./work-queue.ts";

/** `promptBudget`: the agent's prompt budget in tokens (memory/budget.ts), for the budgeted sections. */
export function defaultContributors(
  promptBudget: (agent: AgentRecord) => number = () => 100_000,
): PromptContributor[] {
  return [
    policyContributor,
    agentsMdContributor,
    toolsGuidanceContributor,
    workQueueContributor,
    environmentContributor,
    workingMemoryContributor((a) => memoryBudget(promptBudget(a))),
    recentHistoryContributor((a) => historyBudget(promptBudget(a))),
  ];
}
