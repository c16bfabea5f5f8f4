// Runtime policy (the system prompt itself) and the mode guidance chosen by what kind of
// trigger started the turn.
import type { MessageEnvelope } from "../domain/message.ts";
import { promptFile, type PromptContributor } from "./section.ts";

export const policyContributor: PromptContributor = {
  id: "policy",
  contribute: (ctx) => [
    { placement: "system_prompt", text: promptFile("runtime-policy.md"), stability: "stable" },
    {
      placement: "system",
      text: modeGuidance(ctx.message),
      stability: "turn_scoped",
      cache_exempt: true,
    },
  ],
};

function modeGuidance(message: MessageEnvelope): string {
  switch (message.trigger_kind) {
    case "operator_input":
      return promptFile("mode-operator.md");
    case "external_event":
      return promptFile("mode-event.md");
    default:
      return promptFile("mode-task.md");
  }
}
