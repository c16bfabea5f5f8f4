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
import type {
  Response as OpenAIResponse,
  ResponseCreateParamsStreaming,
  ResponseOutputItem,
  ResponseStreamEvent,
} from "openai/resources/responses/responses";
import {
  classifyError,
  joinUrl,
  streamErrorToProviderError,
  unsupportedShape,
  type ClassifyContext,
} from "./errors.ts";
import {
  systemText,
  type ProviderRequest,
  type ProviderResponse,
  type TransportClient,
  type TransportSendOptions,
} from "./model.ts";
import {
  frameInput,
  lowerResponsesInput,
  lowerResponsesTools,
  openAiClient,
  parseResponsesResponse,
  streamFailure,
} from "./openai-responses.ts";
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

/** Folds a Responses event stream into the terminal response (output rebuilt when needed). */
export async function collectResponsesStream(
  events: AsyncIterable<ResponseStreamEvent>,
  ctx: ClassifyContext,
): Promise<Partial<OpenAIResponse>> {
  const done = new Map<number, ResponseOutputItem>();
  for await (const event of events) {
    switch (event.type) {
      case "response.output_item.done":
        done.set(event.output_index, event.item);
        break;
      case "response.completed":
      case "response.incomplete": {
        const res: Partial<OpenAIResponse> = { ...event.response };
        if (!Array.isArray(res.output) || res.output.length === 0) {
          res.output = [...done.entries()].sort(([a], [b]) => a - b).map(([, item]) => item);
        }
        return res;
      }
      case "response.failed":
        throw streamFailure(event.response, ctx);
      case "error":
        throw streamErrorToProviderError(event.code ?? undefined, event.message, ctx);
      default:
        break;
    }
  }
  throw unsupportedShape("stream ended without a terminal response event", ctx);
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
        const client = openAiClient(candidate);
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
