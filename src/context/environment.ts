// Where the agent is: identity, home, execution root, working directory and the execution
// policy, so the model never has to guess its paths.
import type { PromptContributor } from "./section.ts";

export const environmentContributor: PromptContributor = {
  id: "environment",
  contribute: ({ agent, executionRoot, cwd }) => [
    {
      placement: "context",
      stability: "turn_scoped",
      text: [
        "Environment:",
        `Agent: ${agent.agent_id}`,
        `Agent home: ${agent.agent_home}`,
        `Execution root: ${executionRoot}`,
        `Working directory: ${cwd}`,
        `Execution policy: host_local (paths are checked; the process itself is not sandboxed)`,
      ].join("\n"),
    },
  ],
};
