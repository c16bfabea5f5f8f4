// Retry, fallback and the attempt timeline, end to end against the fake provider.
// Backoff goes through a fake clock: no test waits on real time for a retry.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FailureArtifact, ProviderAttemptTimeline } from "../src/domain/provider.ts";
import { callProvider, createDefaultTransports } from "../src/providers/fallback.ts";
import { retryAfterMs, scrub } from "../src/providers/errors.ts";
import { backoffMs, DEFAULT_RETRY_POLICY } from "../src/providers/retry.ts";
import type { ProviderTransport } from "../src/providers/types.ts";
import { baseRequest, candidateFor, fakeClock, SECRET } from "./fake-provider/fixtures.ts";
import { fault, reply, startFakeProvider, type FakeProvider } from "./fake-provider/server.ts";

let fake: FakeProvider;
beforeAll(async () => {
  fake = await startFakeProvider();
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.setFallback(null);
  expect(fake.pending()).toBe(0);
});

const ALL: ProviderTransport[] = [
  "openai_responses",
  "openai_chat_completions",
  "anthropic_messages",
  "openai_codex_responses",
];

describe("retry on one candidate", () => {
  for (const transport of ALL) {
    it(`429, 429, 200 gives three attempts and a success (${transport})`, async () => {
      const clock = fakeClock();
      fake.enqueue(
        fault.status(429),
        fault.status(429),
        reply.text("finally", { input_tokens: 11, output_tokens: 3 }),
      );
      const result = await callProvider({
        candidates: [candidateFor(fake, transport)],
        request: baseRequest(),
        transports: createDefaultTransports(),
        clock,
        // Full jitter pinned to its ceiling: the waits are the exponential caps.
        policy: { ...DEFAULT_RETRY_POLICY, random: () => 1 },
      });
      expect(result.ok).toBe(true);
      if (!result.ok) return;
      expect(result.response.blocks).toEqual([{ type: "assistant_text", text: "finally" }]);
      const t = ProviderAttemptTimeline.parse(result.timeline);
      expect(t.attempts.map((a) => [a.attempt, a.outcome, a.failure_kind, a.status])).toEqual([
        [1, "retrying", "http_429", 429],
        [2, "retrying", "http_429", 429],
        [3, "succeeded", undefined, undefined],
      ]);
      expect(t.attempts.map((a) => a.backoff_ms)).toEqual([250, 500, undefined]);
      expect(clock.sleeps).toEqual([250, 500]);
      expect(
        t.attempts.every(
          (a) => a.max_attempts === 3 && a.duration_ms !== undefined && a.started_at !== undefined,
        ),
      ).toBe(true);
      expect(t.winning_model_ref).toBe(t.requested_model_ref);
      expect(t.attempts[2]?.token_usage?.output_tokens).toBe(3);
      expect(t.aggregated_token_usage?.output_tokens).toBe(3);
      expect(fake.requests).toHaveLength(3);
    });
  }

  it("honours retry-after and retry-after-ms up to the cap, beyond the backoff ceiling", async () => {
    const clock = fakeClock();
    fake.enqueue(
      fault.status(429, { headers: { "retry-after": "1" } }),
      fault.status(503, { headers: { "retry-after": "60" } }),
      reply.text("ok"),
    );
    fake.enqueue(fault.status(429, { headers: { "retry-after-ms": "1500" } }), reply.text("ok"));
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
    });
    expect(result.ok).toBe(true);
    expect(clock.sleeps).toEqual([1000, 60_000]);
    expect(DEFAULT_RETRY_POLICY.retry_after_cap_ms).toBe(60_000);
    const second = await callProvider({
      candidates: [candidateFor(fake, "openai_chat_completions")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
    });
    expect(second.ok).toBe(true);
    expect(clock.sleeps).toEqual([1000, 60_000, 1500]);
  });

  it("retries a connection reset and a 5xx, fails fast on invalid JSON", async () => {
    const clock = fakeClock();
    fake.enqueue(fault.reset(), fault.status(502), fault.invalidJson());
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.timeline.attempts.map((a) => [a.failure_kind, a.outcome])).toEqual([
      ["connection_failure", "retrying"],
      ["http_5xx", "retrying"],
      ["invalid_json", "fail_fast_aborted"],
    ]);
    expect(result.timeline.attempts[0]?.transport_diagnostics?.error_flags?.is_connect).toBe(true);
    expect(result.failure.category).toBe("protocol");
  });

  it("times out a hanging request and retries it", async () => {
    fake.enqueue(fault.hang(), reply.text("after hang"));
    const result = await callProvider({
      candidates: [candidateFor(fake, "anthropic_messages")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
      policy: { ...DEFAULT_RETRY_POLICY, idle_timeout_ms: 100 },
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.timeline.attempts[0]).toMatchObject({
      failure_kind: "timeout",
      outcome: "retrying",
    });
    expect(result.timeline.attempts[0]?.transport_diagnostics?.error_flags?.is_timeout).toBe(true);
  });

  it("does not retry 501 (not an eligible 5xx)", async () => {
    fake.enqueue(fault.status(501));
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_chat_completions")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(result.ok).toBe(false);
    expect(result.timeline.attempts).toHaveLength(1);
    expect(result.timeline.attempts[0]).toMatchObject({
      failure_kind: "http_5xx",
      outcome: "fail_fast_aborted",
      status: 501,
    });
  });
});

describe("fallback across candidates", () => {
  it("401 on the first candidate aborts it at once and the fallback answers", async () => {
    fake.enqueue(
      fault.status(401, { message: `Incorrect API key provided: ${SECRET}` }),
      reply.text("from anthropic"),
    );
    const primary = candidateFor(fake, "openai_responses");
    const backup = candidateFor(fake, "anthropic_messages");
    const result = await callProvider({
      candidates: [primary, backup],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.model_ref).toBe(backup.model_ref);
    expect(result.candidate_index).toBe(1);
    expect(
      result.timeline.attempts.map((a) => [
        a.model_ref,
        a.failure_kind,
        a.outcome,
        a.advanced_to_fallback,
      ]),
    ).toEqual([
      [primary.model_ref, "http_401", "fail_fast_aborted", true],
      [backup.model_ref, undefined, "succeeded", false],
    ]);
    expect(result.timeline.requested_model_ref).toBe(primary.model_ref);
    expect(result.timeline.winning_model_ref).toBe(backup.model_ref);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("skips unavailable candidates and unsupported transports with a recorded attempt", async () => {
    fake.enqueue(reply.text("third time"));
    const transports = createDefaultTransports();
    const { openai_chat_completions: _chat, ...withoutChat } = transports;
    const result = await callProvider({
      candidates: [
        candidateFor(fake, "openai_responses", {
          unavailable_reason: "missing credential OPENAI_API_KEY",
          credential: null,
        }),
        candidateFor(fake, "openai_chat_completions", {
          provider_id: "compat",
          model_ref: "compat/m",
        }),
        candidateFor(fake, "anthropic_messages"),
      ],
      request: baseRequest(),
      transports: withoutChat,
      clock: fakeClock(),
    });
    expect(result.ok).toBe(true);
    expect(
      result.timeline.attempts.map((a) => [a.disposition, a.failure_kind, a.advanced_to_fallback]),
    ).toEqual([
      ["skipped_unavailable", "candidate_unavailable", true],
      ["unsupported_transport", "unsupported_transport", true],
      ["success", undefined, false],
    ]);
    expect(fake.requests).toHaveLength(1);
  });

  it("exhausted retries on every candidate give one aggregated failure with the whole timeline", async () => {
    fake.setFallback(() => fault.status(503, { message: `overloaded (key ${SECRET})` }));
    const a = candidateFor(fake, "openai_responses");
    const b = candidateFor(fake, "anthropic_messages");
    const c = candidateFor(fake, "openai_codex_responses");
    const result = await callProvider({
      candidates: [a, b, c],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe("exhausted");
    const failure = FailureArtifact.parse(result.failure);
    expect(failure).toMatchObject({
      category: "transport",
      kind: "http_5xx",
      status: 503,
      model_ref: c.model_ref,
      provider: c.provider_id,
    });
    expect(failure.metadata).toMatchObject({
      attempts: "9",
      candidates_tried: "3",
      retries_exhausted: "true",
      reason: "exhausted",
    });
    const attempts = failure.attempt_timeline?.attempts ?? [];
    expect(attempts).toHaveLength(9);
    expect(attempts.map((x) => x.outcome)).toEqual([
      "retrying",
      "retrying",
      "retries_exhausted",
      "retrying",
      "retrying",
      "retries_exhausted",
      "retrying",
      "retrying",
      "retries_exhausted",
    ]);
    expect(attempts.filter((x) => x.advanced_to_fallback).map((x) => x.model_ref)).toEqual([
      a.model_ref,
      b.model_ref,
    ]);
    expect(failure.attempt_timeline?.active_model_ref).toBe(c.model_ref);
    expect(failure.attempt_timeline?.winning_model_ref).toBeUndefined();
    expect(fake.requests).toHaveLength(9);
    expect(JSON.stringify(result)).not.toContain(SECRET);
  });

  it("context_length_exceeded stops at once: no retry, no fallback", async () => {
    fake.enqueue(fault.contextLength());
    const result = await callProvider({
      candidates: [
        candidateFor(fake, "anthropic_messages"),
        candidateFor(fake, "openai_responses"),
      ],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe("context_length_exceeded");
    expect(result.failure.kind).toBe("context_length_exceeded");
    expect(result.timeline.attempts).toHaveLength(1);
    expect(result.timeline.attempts[0]).toMatchObject({
      disposition: "turn_terminal",
      advanced_to_fallback: false,
    });
    expect(fake.requests).toHaveLength(1);
  });

  it("recognises OpenAI's context_length_exceeded code too", async () => {
    fake.enqueue(fault.contextLength());
    const result = await callProvider({
      candidates: [
        candidateFor(fake, "openai_chat_completions"),
        candidateFor(fake, "anthropic_messages"),
      ],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(!result.ok && result.reason).toBe("context_length_exceeded");
    expect(fake.requests).toHaveLength(1);
  });
});

describe("operator abort", () => {
  it("stops a hanging request immediately and says it was the operator", async () => {
    fake.enqueue(fault.hang());
    const controller = new AbortController();
    const pending = callProvider({
      candidates: [
        candidateFor(fake, "openai_codex_responses"),
        candidateFor(fake, "anthropic_messages"),
      ],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
      signal: controller.signal,
    });
    // Abort once the request has reached the server.
    await new Promise<void>((resolve) => {
      const check = () => (fake.requests.length > 0 ? resolve() : setImmediate(check));
      check();
    });
    controller.abort();
    const result = await pending;
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toBe("operator_abort");
    expect(result.failure).toMatchObject({ kind: "operator_abort", category: "runtime" });
    expect(result.timeline.attempts).toHaveLength(1);
    expect(result.timeline.attempts[0]).toMatchObject({
      disposition: "operator_abort",
      failure_kind: "operator_abort",
    });
    expect(fake.requests).toHaveLength(1);
  });

  it("stops during backoff without another attempt", async () => {
    const controller = new AbortController();
    const clock = fakeClock();
    const sleep = clock.sleep;
    clock.sleep = async (ms, signal) => {
      controller.abort();
      return sleep(ms, signal);
    };
    fake.enqueue(fault.status(429));
    const result = await callProvider({
      candidates: [candidateFor(fake, "openai_responses")],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock,
      signal: controller.signal,
    });
    expect(!result.ok && result.reason).toBe("operator_abort");
    expect(fake.requests).toHaveLength(1);
  });
});

describe("secrets", () => {
  it("never appear in artifacts or diagnostics, whatever the provider echoes", async () => {
    fake.enqueue(
      fault.status(400, {
        message: `bad request; Authorization: Bearer ${SECRET}; x-api-key: ${SECRET}`,
      }),
      fault.status(403, { message: `key ${SECRET} has no access` }),
    );
    const result = await callProvider({
      candidates: [
        candidateFor(fake, "openai_chat_completions"),
        candidateFor(fake, "anthropic_messages"),
      ],
      request: baseRequest(),
      transports: createDefaultTransports(),
      clock: fakeClock(),
    });
    expect(result.ok).toBe(false);
    const text = JSON.stringify(result);
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain("0123456789abcdef");
    expect(text).toContain("[redacted]");
  });

  it("scrub removes credential values, bearer tokens and key-like strings", () => {
    expect(
      scrub(`Authorization: Bearer abc.def-123 and ${SECRET} and sk-live-abcdefghijkl`, [SECRET]),
    ).not.toMatch(/abc\.def-123|SECRET|abcdefghijkl/);
  });
});

describe("backoff arithmetic", () => {
  it("is full jitter under an exponential, capped ceiling, and replaced by retry-after", () => {
    const top = { ...DEFAULT_RETRY_POLICY, random: () => 0.999999 };
    expect([0, 1, 2, 3, 4, 5].map((i) => backoffMs(i, undefined, top))).toEqual([
      250, 500, 1000, 2000, 4000, 4000,
    ]);
    const bottom = { ...DEFAULT_RETRY_POLICY, random: () => 0 };
    expect([0, 3, 5].map((i) => backoffMs(i, undefined, bottom))).toEqual([0, 0, 0]);
    // With the real source the waits spread over the whole range.
    const waits = Array.from({ length: 200 }, () => backoffMs(4, undefined));
    expect(Math.min(...waits)).toBeLessThan(1000);
    expect(Math.max(...waits)).toBeGreaterThan(3000);
    expect(waits.every((w) => w >= 0 && w <= 4000)).toBe(true);
    // A provider's own wait is taken as given (past max_backoff_ms), up to the cap.
    expect(backoffMs(0, 1500)).toBe(1500);
    expect(backoffMs(0, 30_000)).toBe(30_000);
    expect(backoffMs(0, 600_000)).toBe(DEFAULT_RETRY_POLICY.retry_after_cap_ms);
  });

  it("parses retry-after forms", () => {
    expect(retryAfterMs(new Headers({ "retry-after-ms": "750" }))).toBe(750);
    expect(retryAfterMs(new Headers({ "retry-after": "2" }))).toBe(2000);
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(retryAfterMs(new Headers({ "retry-after": "Wed, 01 Jan 2025 00:00:03 GMT" }), now)).toBe(
      3000,
    );
    expect(retryAfterMs(new Headers({}))).toBeUndefined();
  });
});
