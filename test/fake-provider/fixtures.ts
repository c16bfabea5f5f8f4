// Test fixtures for the provider layer: candidates pointed at the fake provider, a fake
// clock whose sleep returns at once, and a small neutral request.
import type { ProviderRequest, ToolSpec } from "../../src/providers/model.ts";
import type { ModelCandidate, ProviderTransport } from "../../src/providers/types.ts";
import type { FakeKind, FakeProvider } from "./server.ts";

export const SECRET = "sk-test-SECRET-0123456789abcdef";

const KIND_OF: Record<ProviderTransport, FakeKind> = {
  openai_responses: "openai",
  openai_chat_completions: "openai",
  anthropic_messages: "anthropic",
  openai_codex_responses: "codex",
};

/** A candidate configured the way a user would point a provider at the fake. */
export function candidateFor(
  fake: FakeProvider,
  transport: ProviderTransport,
  overrides: Partial<ModelCandidate> = {},
): ModelCandidate {
  const provider =
    overrides.provider_id ??
    (transport === "anthropic_messages"
      ? "anthropic"
      : transport === "openai_codex_responses"
        ? "openai-codex"
        : "openai");
  const model = overrides.model ?? "fake-model";
  return {
    model_ref: `${provider}/${model}`,
    provider_id: provider,
    model,
    transport,
    base_url: fake.baseUrl(KIND_OF[transport]),
    credential: {
      kind: transport === "openai_codex_responses" ? "bearer_token" : "api_key",
      value: SECRET,
      source_label: "env:TEST_KEY",
    },
    ...overrides,
  };
}

export type FakeClock = {
  now(): Date;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  sleeps: number[];
};

/** Time advances only through `sleep`, which returns at once and records the wait. */
export function fakeClock(start = Date.parse("2025-01-01T00:00:00Z")): FakeClock {
  let t = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => new Date(t),
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason;
      sleeps.push(ms);
      t += ms;
    },
  };
}

export const shellTool: ToolSpec = {
  name: "exec_command",
  description: "Run a shell command.",
  parameters: {
    type: "object",
    properties: { cmd: { type: "string" }, timeout_ms: { type: "integer" } },
    required: ["cmd"],
  },
};

export const patchTool: ToolSpec = {
  name: "apply_patch",
  description: "Apply a unified diff.",
  parameters: { type: "object", properties: { patch: { type: "string" } }, required: ["patch"] },
  freeform: { syntax: "lark", definition: "start: /(.|\\n)+/", input_field: "patch" },
};

export function baseRequest(overrides: Partial<ProviderRequest> = {}): ProviderRequest {
  return {
    frame: {
      system_prompt: "You are a test agent.",
      system_blocks: [{ text: "Stable guidance.", stability: "stable", cache_breakpoint: true }],
      context_blocks: [
        { text: "Context: workspace /tmp/x", stability: "turn_scoped", cache_breakpoint: false },
      ],
      cache: {
        agent_id: "agent_1",
        prompt_cache_key: "pck_agent_1_v1",
        context_fingerprint: "fp1",
      },
    },
    conversation: [{ type: "user_text", text: "hello" }],
    tools: [shellTool],
    ...overrides,
  };
}
