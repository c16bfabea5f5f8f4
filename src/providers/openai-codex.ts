// OpenAI Codex transport: Responses over SSE, shaped for the ChatGPT Codex backend.
//
// Request-shape rules that differ from plain Responses:
// - always `stream: true` and `store: false` (the backend keeps no state, so no
//   `previous_response_id`; reasoning items are replayed only with encrypted content)
// - `instructions` is always present (the backend requires it)
// - `max_output_tokens` is never sent (the backend rejects it)
// - `reasoning: null`, `include: []`, `tool_choice: "auto"`, `parallel_tool_calls` kept explicit
//
// The terminal `response.completed` / `response.incomplete` event gives the result; if its
// `output` is empty the items are rebuilt from `response.output_item.done` events.
// `response.failed` and `error` events are classified by their error code.
import type { ResponseCreateParamsStreaming } from "openai/resources/responses/responses";
import { classifyError, joinUrl, type ClassifyContext } from "./errors.ts";
import {
  systemText,
  type ProviderRequest,
  type ProviderResponse,
  type TransportClient,
  type TransportSendOptions,
} from "./model.ts";
import {
  collectResponsesStream,
  frameInput,
  lowerResponsesInput,
  lowerResponsesTools,
  openAiClient,
  parseResponsesResponse,
} from "./openai-responses.ts";

export { collectResponsesStream };
import type { ModelCandidate } from "./types.ts";

/** The streaming request body sent to `<base_url>/responses`. */
export function buildCodexRequest(
  candidate: ModelCandidate,
  request: ProviderRequest,
): ResponseCreateParamsStreaming {
  const input = [
    ...frameInput(request),
    ...lowerResponsesInput(request.conversation, request.tools, {
      native_freeform: true,
      require_encrypted_reasoning: true,
    }),
  ];
  const body: ResponseCreateParamsStreaming = {
    model: candidate.model,
    instructions: systemText(request.frame),
    input,
    tools: lowerResponsesTools(request.tools, request, true),
    tool_choice: "auto",
    parallel_tool_calls: true,
    reasoning: null,
    store: false,
    stream: true,
    include: [],
  };
  if (request.frame.cache) body.prompt_cache_key = request.frame.cache.prompt_cache_key;
  return body;
}

export function createOpenAICodexTransport(): TransportClient {
  return {
    transport: "openai_codex_responses",
    async send(
      candidate: ModelCandidate,
      request: ProviderRequest,
      opts: TransportSendOptions,
    ): Promise<ProviderResponse> {
      const ctx: ClassifyContext = { candidate, url: joinUrl(candidate.base_url, "responses") };
      try {
        const client = await openAiClient(candidate);
        const stream = await client.responses.create(buildCodexRequest(candidate, request), {
          signal: opts.signal,
          maxRetries: 0,
        });
        const terminal = await collectResponsesStream(stream, ctx);
        // The SDK ends the iteration quietly on abort; do not mistake that for an answer.
        if (opts.signal.aborted) throw opts.signal.reason;
        return parseResponsesResponse(terminal, request.tools, ctx);
      } catch (err) {
        if (opts.signal.aborted) throw classifyError(opts.signal.reason ?? err, ctx);
        throw classifyError(err, ctx);
      }
    },
  };
}
