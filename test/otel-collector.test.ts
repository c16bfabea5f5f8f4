// A collector that black-holes exports (reads them, never answers) or is not there at all:
// turns go on, the span queue never holds more than its bound, and every span that could not
// be delivered is counted in /metrics. Nothing on a turn's path waits for the collector, nor
// encodes a batch: the queue sends a full batch from a task of its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply, type FakeAnswer } from "./fake-provider/server.ts";
import { startOtlpReceiver, type OtlpReceiver } from "./helpers/otlp-receiver.ts";
import { promptAndWait } from "./helpers/turns.ts";
import { BoundedBatchProcessor } from "../src/telemetry/otel.ts";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";

const fake = useFakeProvider();
const MAX_QUEUE = 32;
const TURNS = 12;

async function host(endpoint: string): Promise<TestRuntime> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const settings = [
    ["telemetry.traces.enabled", "true"],
    ["telemetry.traces.endpoint", endpoint],
    ["telemetry.traces.max_queue_spans", String(MAX_QUEUE)],
    ["telemetry.metrics.enabled", "true"],
  ];
  const r = await runCli(["config", "set", ...settings.flat()], { env: { HOLON_HOME: home } });
  expect(r.code, r.stderr).toBe(0);
  return await startRuntime({
    home,
    env: {
      ...process.env,
      HOLON_HOME: home,
      OTEL_EXPORTER_OTLP_TIMEOUT: "300",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "8",
      OTEL_BSP_SCHEDULE_DELAY: "20",
    },
  });
}

/** TURNS prompts, each a tool call and an answer; the queue is sampled after every turn. */
async function drive(rt: TestRuntime): Promise<number> {
  let maxQueued = 0;
  for (let i = 0; i < TURNS; i++) {
    await promptAndWait(rt, `turn ${i}`);
    maxQueued = Math.max(maxQueued, rt.host.services.tracing.stats().queued);
  }
  return maxQueued;
}

function dropped(metrics: string): number {
  return [...metrics.matchAll(/^holon_telemetry_spans_dropped_total\{reason="\w+"\} (\d+)$/gm)]
    .map((m) => Number(m[1]))
    .reduce((a, b) => a + b, 0);
}

describe("a collector that does not answer", () => {
  beforeAll(() => {
    fake.setFallback((req): FakeAnswer =>
      (req.body.input as any[]).at(-1)?.type === "function_call_output"
        ? reply.text("ok")
        : reply.tools([{ name: "ExecCommand", arguments: { cmd: "true" } }]),
    );
  });
  afterAll(() => fake.setFallback(null));

  it("black-holed: every turn finishes, the queue stays bounded, lost spans are counted", async () => {
    const hole: OtlpReceiver = await startOtlpReceiver("blackhole");
    const rt = await host(hole.url);
    try {
      const maxQueued = await drive(rt);
      expect(maxQueued).toBeLessThanOrEqual(MAX_QUEUE);
      expect(hole.requests).toBeGreaterThan(0); // it was tried, and never answered
      const stats = await waitFor(() => {
        const s = rt.host.services.tracing.stats();
        return s.dropped_queue_full + s.dropped_export_failed > 0 ? s : null;
      });
      expect(stats.exported).toBe(0);
      // Some 5 spans a turn: far more than the queue holds; the rest were dropped, counted.
      const m = await rt.req("GET", "/metrics");
      expect(dropped(m.json as string)).toBeGreaterThan(0);
      expect(m.json).toMatch(/^holon_telemetry_spans_exported_total 0$/m);
    } finally {
      await rt.close();
      await hole.close();
    }
  }, 90_000);

  it("down: exports fail at once, turns go on, the failures are counted", async () => {
    const gone = await startOtlpReceiver();
    const url = gone.url;
    await gone.close(); // nothing listens on that port any more
    const rt = await host(url);
    try {
      const maxQueued = await drive(rt);
      expect(maxQueued).toBeLessThanOrEqual(MAX_QUEUE);
      await waitFor(() => rt.host.services.tracing.stats().dropped_export_failed > 0, {
        what: "a failed export to be counted",
      });
      const m = await rt.req("GET", "/metrics");
      expect(dropped(m.json as string)).toBeGreaterThan(0);
    } finally {
      await rt.close();
    }
  }, 90_000);
});

describe("the span queue", () => {
  const span = {} as ReadableSpan;
  const processor = (exporter: SpanExporter) =>
    new BoundedBatchProcessor(exporter, {
      maxQueue: 8,
      maxBatch: 4,
      delayMs: 3_600_000,
      timeoutMs: 1000,
    });

  it("never encodes or sends a batch inside the call that ended a span", async () => {
    const calls: number[] = [];
    let ending = false;
    const p = processor({
      export: (batch, done) => {
        calls.push(ending ? -batch.length : batch.length);
        done({ code: 0 });
      },
      shutdown: async () => {},
    });
    ending = true;
    for (let i = 0; i < 4; i++) p.onEnd(span); // a full batch
    ending = false;
    expect(calls).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(calls).toEqual([4]);
    await p.shutdown();
  });

  it("keeps exporting after an exporter that answers synchronously", async () => {
    let exported = 0;
    const p = processor({
      export: (batch, done) => {
        exported += batch.length;
        done({ code: 0 });
      },
      shutdown: async () => {},
    });
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 4; i++) p.onEnd(span);
      await new Promise((r) => setImmediate(r));
    }
    expect(exported).toBe(20);
    expect(p.droppedQueueFull).toBe(0);
    await p.shutdown();
  });
});
