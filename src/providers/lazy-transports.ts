// The host's set of provider transports, each family's module loaded the first time a round
// (or a remote compaction) uses it: a host that only talks to one family never loads the
// others' code, and `holon run` loads none of it before it builds its first request. One
// instance per family for the life of the host, as with `createDefaultTransports` (the
// OpenAI Responses transport keeps the continuation memory of each cache scope).
import type { TransportClient } from "./model.ts";
import type { OpenAIResponsesTransport } from "./openai-responses.ts";
import type { ProviderTransport } from "./types.ts";

/** A transport whose module loads on its first send; `loaded()` is the real one. */
export type LazyTransport<T extends TransportClient = TransportClient> = TransportClient & {
  loaded(): Promise<T>;
};

function lazy<T extends TransportClient>(
  transport: ProviderTransport,
  load: () => Promise<T>,
): LazyTransport<T> {
  let real: Promise<T> | undefined;
  const loaded = () => (real ??= load());
  return {
    transport,
    send: async (candidate, request, options) => (await loaded()).send(candidate, request, options),
    loaded,
  };
}

export type LazyTransportSet = {
  [K in ProviderTransport]: K extends "openai_responses"
    ? LazyTransport<OpenAIResponsesTransport>
    : LazyTransport;
};

export function lazyTransports(): LazyTransportSet {
  return {
    openai_responses: lazy("openai_responses", async () =>
      (await import("./openai-responses.ts")).createOpenAIResponsesTransport(),
    ),
    openai_chat_completions: lazy("openai_chat_completions", async () =>
      (await import("./openai-chat-completions.ts")).createOpenAIChatCompletionsTransport(),
    ),
    anthropic_messages: lazy("anthropic_messages", async () =>
      (await import("./anthropic-messages.ts")).createAnthropicMessagesTransport(),
    ),
    openai_codex_responses: lazy("openai_codex_responses", async () =>
      (await import("./openai-codex.ts")).createOpenAICodexTransport(),
    ),
  };
}
