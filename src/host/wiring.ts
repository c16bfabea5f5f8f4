// Assembles a host's production collaborators: live configuration, model candidates,
// the provider call with retry and fallback, the tool registry and the task service.
// `serve` and in-process `run` use this; tests may open a host with their own executor.
import type { HostOptions, RuntimeHost } from "./host.ts";
import { ConfigSource } from "./config.ts";
import { agentModelState, parseModelRef } from "../providers/resolve.ts";
import { providerDefinition } from "../providers/builtin.ts";
import { HolonError } from "../domain/errors.ts";
import { ProviderTurnExecutor } from "../turn/turn.ts";
import { callModel } from "../turn/model-call.ts";
import { buildRegistry } from "../tools/builtin.ts";
import { TaskService } from "../tasks/service.ts";

export async function buildHostOptions(
  home: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<HostOptions> {
  const config = new ConfigSource({ home, env });
  return {
    home,
    executor: (host: RuntimeHost) => {
      const tasks = new TaskService(host);
      host.onShutdown(() => tasks.close());
      host.onOpen(() => tasks.recover());
      host.modelStateProvider = (agent) =>
        agentModelState(config.current().values, agent.model_override ?? null);
      host.modelCatalog = () => config.models();
      host.modelRefCheck = (ref) => {
        const parsed = parseModelRef(ref);
        if (!parsed) {
          throw new HolonError("invalid_model_ref", `'${ref}' is not a model ref`, {
            hint: "use <provider_id>/<model>",
          });
        }
        if (!providerDefinition(parsed.provider_id, config.current().values)) {
          throw new HolonError("unknown_provider", `no provider named '${parsed.provider_id}'`, {
            hint: "see `holon config providers list`, or add one with `holon config providers set`",
          });
        }
      };
      return new ProviderTurnExecutor({
        store: host.store,
        registry: buildRegistry(),
        tasks,
        candidates: (agent) => config.candidates(agent.model_override ?? null),
        callModel,
        budget: () => {
          const rt = config.current().values.runtime;
          return {
            default_tokens: rt.default_tool_output_tokens,
            max_tokens: rt.max_tool_output_tokens,
          };
        },
        scheduleWake: (agentId, ms) => host.scheduleWake(agentId, ms),
      });
    },
  };
}
