// Where the agent is: identity, home, execution root, working directory and the execution
// policy, so the model never has to guess its paths.
import type { PromptContributor } from "./section.ts";
import type { ExecutionPolicySnapshot } from "../domain/workspace.ts";

function policyLine(policy: ExecutionPolicySnapshot | undefined): string {
  if (policy?.backend === "host_bwrap") {
    return (
      "Execution policy: host_bwrap (commands run sandboxed: they can write only the execution " +
      "root, the agent home and build caches, plus a private /tmp; HOLON_HOME and credential " +
      "files are not visible; the network is available. Ask the operator to add a path to the " +
      "agent's sandbox settings rather than working around the sandbox)"
    );
  }
  const why = policy?.sandbox?.reason;
  return `Execution policy: host_local (paths are checked; the process itself is not sandboxed${why ? `: ${why}` : ""})`;
}

export const environmentContributor: PromptContributor = {
  id: "environment",
  contribute: ({ agent, executionRoot, cwd, executionPolicy }) => [
    {
      placement: "context",
      stability: "turn_scoped",
      text: [
        "Environment:",
        `Agent: ${agent.agent_id}`,
        `Agent home: ${agent.agent_home}`,
        `Execution root: ${executionRoot}`,
        `Working directory: ${cwd}`,
        policyLine(executionPolicy),
      ].join("\n"),
    },
  ],
};
