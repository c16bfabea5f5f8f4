// How to use the tools well: stable text, the end of the cacheable system prefix.
import { promptFile, type PromptContributor } from "./section.ts";

export const toolsGuidanceContributor: PromptContributor = {
  id: "tools",
  contribute: () => [
    {
      placement: "system",
      text: promptFile("tool-guidance.md"),
      stability: "stable",
      cache_breakpoint: true,
    },
  ],
};
