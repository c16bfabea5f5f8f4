// The turn's one way to call a model: the provider layer's retry/fallback loop over the
// candidates, with one set of transports per process (the OpenAI transport keeps its
// incremental-continuation memory there).
import { callProvider, createDefaultTransports } from "../providers/fallback.ts";
import type { ModelCall } from "./turn.ts";

let transports: ReturnType<typeof createDefaultTransports> | undefined;

export const callModel: ModelCall = async ({ candidates, request, signal }) => {
  transports ??= createDefaultTransports();
  const result = await callProvider({ candidates, request, transports, signal });
  if (result.ok) {
    return {
      ok: true,
      response: result.response,
      timeline: result.timeline,
      model_ref: result.model_ref,
    };
  }
  return {
    ok: false,
    failure: result.failure,
    timeline: result.timeline,
    aborted: result.reason === "operator_abort",
  };
};
