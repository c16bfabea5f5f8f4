// The agent's external trigger capability in its prompt: the wake URL an outside system can
// call, marked as a secret. Only public agents have one (private agents take no outside
// ingress); an in-process run without an HTTP listener has no URL to show, so no section.
import type { ExternalTriggerDescriptor } from "../domain/waiting.ts";
import { promptFile, type PromptContributor } from "./section.ts";

/** Where the descriptor comes from (waiting/triggers.ts; null when the agent has none). */
export type TriggerDescriptors = {
  descriptor(agentId: string, reveal: boolean): Promise<ExternalTriggerDescriptor | null>;
};

export function externalTriggerContributor(triggers: TriggerDescriptors): PromptContributor {
  return {
    id: "external_trigger",
    contribute: async ({ agent }) => {
      if (agent.visibility !== "public") return [];
      const d = await triggers.descriptor(agent.agent_id, true);
      if (d === null || d.trigger_url === null || d.status !== "active") return [];
      return [
        {
          placement: "context",
          stability: "agent_scoped",
          text: promptFile("external-trigger.md").replace("{{trigger_url}}", d.trigger_url),
        },
      ];
    },
  };
}
