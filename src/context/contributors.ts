// The default prompt contributors, in the loading contract's order: runtime policy and mode
// guidance, agent then workspace instructions, tool guidance, then the turn's environment
// and recent history. Planes add theirs here (work queue, working memory, skills).
import { agentsMdContributor } from "./agents-md.ts";
import { environmentContributor } from "./environment.ts";
import { policyContributor } from "./policy.ts";
import { recentHistoryContributor } from "./recent-history.ts";
import type { PromptContributor } from "./section.ts";
import { toolsGuidanceContributor } from "./tools-guidance.ts";
import { workQueueContributor } from "./work-queue.ts";

export function defaultContributors(): PromptContributor[] {
  return [
    policyContributor,
    agentsMdContributor,
    toolsGuidanceContributor,
    workQueueContributor,
    environmentContributor,
    recentHistoryContributor,
  ];
}
