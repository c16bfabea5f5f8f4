// The metrics over OTLP: a host configured as a user would (`holon config set
// telemetry.metrics.otlp_*`, the standard OTEL_* variables) runs a real turn with a tool
// call, and every periodic export reaches a receiver inside the test that decodes
// /v1/metrics with the official OpenTelemetry definitions. The families are the ones
// /metrics serves (one registry), counters are monotonic cumulative Sums, gauges Gauges,
// histograms Histograms with the same buckets, and gen_ai.client.token.usage matches the
// usage the scripted provider reported. A collector that black-holes or is gone costs the
// turns nothing: the lost exports are counted and at most one is ever in flight.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply, type FakeAnswer, type RecordedRequest } from "./fake-provider/server.ts";
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedMetric,
} from "./helpers/otlp-receiver.ts";
import { metricExportSettings } from "../src/telemetry/metrics.ts";
import { promptAndWait } from "./helpers/turns.ts";

const fake = useFakeProvider();
const KEY = "SEKRET-METRICS-KEY-4410";

async function host(endpoint: string, env: Record<string, string> = {}): Promise<TestRuntime> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const settings = [
    ["telemetry.metrics.enabled", "true"],
    ["telemetry.metrics.otlp_enabled", "true"],
    ["telemetry.metrics.otlp_endpoint", endpoint],
  ];
  const r = await runCli(["config", "set", ...settings.flat()], { env: { HOLON_HOME: home } });
  expect(r.code, r.stderr).toBe(0);
  return await startRuntime({
    home,
    env: {
      ...process.env,
      HOLON_HOME: home,
      OTEL_METRIC_EXPORT_INTERVAL: "100",
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: `x-collector-key=${KEY}`,
      ...env,
    },
  });
}

function lastIsToolOutput(req: RecordedRequest): boolean {
  return (req.body.input as any[]).at(-1)?.type === "function_call_output";
}

/** `name{labels} value` samples of one Prometheus family, without HELP/TYPE lines. */
function promFamilies(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
}

function promNameOf(m: ReceivedMetric): string {
  const suffix = m.unit === "s" ? "_seconds" : m.unit === "USD" ? "_usd" : "";
  return `${m.name.replace(/\./g, "_")}${suffix}${m.kind === "sum" ? "_total" : ""}`;
}

describe("metrics over OTLP", () => {
  let receiver: OtlpReceiver;
  let rt: TestRuntime;
  /** What the scripted provider reported, per request: [input, output]. */
  const given: [number, number][] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    rt = await host(receiver.metricsUrl);
    let n = 0;
    fake.setFallback((req): FakeAnswer => {
      n++;
      const usage = { input_tokens: 3000 + 17 * n, cached_tokens: 2000 + n, output_tokens: 40 + n };
      given.push([usage.input_tokens, usage.output_tokens]);
      return lastIsToolOutput(req)
        ? reply.text("metrics-done", usage)
        : reply.tools([{ name: "ExecCommand", arguments: { cmd: "echo hi" } }], { usage });
    });
    await promptAndWait(rt, "count me", { timeoutMs: 20_000 });
  }, 60_000);

  afterAll(async () => {
    fake.setFallback(null);
    await rt?.close();
    await receiver?.close();
  });

  /** The first export, after the turn, that has seen every provider call. */
  async function exportAfterTurn(): Promise<ReceivedMetric[]> {
    return waitFor(
      () => {
        for (const e of receiver.metricExports) {
          const usage = e.metrics.find((m) => m.name === "gen_ai.client.token.usage");
          const count = (usage?.points ?? [])
            .filter((p) => p.attributes["gen_ai.token.type"] === "input")
            .reduce((a, p) => a + (p.count ?? 0), 0);
          const turns = e.metrics.find((m) => m.name === "holon.turns");
          if (count === given.length && turns?.points.length) return e.metrics;
        }
        return null;
      },
      { what: "a metrics export that counts the turn", timeoutMs: 20_000 },
    );
  }

  it("exports gen_ai.client.token.usage as the provider reported it", async () => {
    const metrics = await exportAfterTurn();
    expect(given.length).toBe(2); // the tool call's round and the answer
    const usage = metrics.find((m) => m.name === "gen_ai.client.token.usage")!;
    expect(usage).toMatchObject({ kind: "histogram", unit: "{token}", temporality: 2 });
    for (const [type, col] of [
      ["input", 0],
      ["output", 1],
    ] as const) {
      const points = usage.points.filter((p) => p.attributes["gen_ai.token.type"] === type);
      expect(points).toHaveLength(1);
      const p = points[0]!;
      expect(p.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fake",
        "gen_ai.request.model": expect.any(String),
      });
      expect(p.count).toBe(given.length);
      expect(p.sum).toBe(given.reduce((a, g) => a + g[col], 0));
      // per-bucket counts, one more than the bounds, adding up to the count
      expect(p.bucketCounts).toHaveLength(p.bounds!.length + 1);
      expect(p.bucketCounts!.reduce((a, b) => a + b, 0)).toBe(p.count);
      expect(p.bounds).toEqual([
        1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
      ]);
      // both calls fall in (1024, 4096] for input and (16, 64] for output
      const bucket = type === "input" ? 6 : 3;
      expect(p.bucketCounts![bucket]).toBe(given.length);
    }
    // holon.tokens agrees, and is a monotonic cumulative Sum
    const tokens = metrics.find((m) => m.name === "holon.tokens")!;
    expect(tokens).toMatchObject({ kind: "sum", monotonic: true, temporality: 2 });
    const input = tokens.points.find(
      (p) => p.attributes.type === "input" && p.attributes.agent === "main",
    )!;
    expect(input.value).toBe(given.reduce((a, g) => a + g[0], 0));
    expect(input.startMs).toBeLessThanOrEqual(input.timeMs);
  });

  it("sends the same families as /metrics, each of the right kind, with the resource and headers", async () => {
    await exportAfterTurn();
    const text = (await rt.req("GET", "/metrics")).json as string;
    // An export snapshotted after that read (the one in flight then may be older).
    const seen = receiver.metricExports.length;
    const metrics = await waitFor(() => receiver.metricExports[seen + 1]?.metrics ?? null, {
      what: "an export made after /metrics was read",
    });
    const served = promFamilies(text);
    const kinds: Record<string, string> = {};
    for (const m of text.matchAll(/^# TYPE (\S+) (\w+)$/gm)) kinds[m[1]!] = m[2]!;
    for (const m of metrics) {
      const name = promNameOf(m);
      expect(served, `${m.name} as ${name}`).toContain(name);
      expect(kinds[name]).toBe(
        m.kind === "sum" ? "counter" : m.kind === "gauge" ? "gauge" : "histogram",
      );
    }
    // every family that had a series at /metrics is in the later export (none loses its series)
    const withSeries = new Set(
      [...text.matchAll(/^([a-z_]+?)(?:_bucket|_sum|_count)?(?:\{[^}]*\})? \S+$/gm)].map(
        (m) => m[1]!,
      ),
    );
    const exported = new Set(metrics.map(promNameOf));
    for (const f of withSeries) if (served.has(f)) expect(exported, f).toContain(f);
    expect(metrics.find((m) => m.name === "holon.agents")).toMatchObject({ kind: "gauge" });
    expect(metrics.find((m) => m.name === "holon.turn.duration")).toMatchObject({
      kind: "histogram",
      unit: "s",
      temporality: 2,
    });
    expect(metrics[0]!.resource["service.name"]).toBe("holon");
    expect(metrics[0]!.scope).toBe("holon");
    expect(receiver.headers.at(-1)?.["x-collector-key"]).toBe(KEY);
    expect(receiver.headers.at(-1)?.["content-type"]).toBe("application/x-protobuf");
    // the export's own counts are in the registry too
    // (counted once the collector's answer is in, which may come after it received the export)
    await waitFor(() => (rt.host.services.metricExport!.stats().exported >= 1 ? true : null), {
      what: "an export counted",
    });
    const later = (await rt.req("GET", "/metrics")).json as string;
    expect(later).toMatch(/^holon_telemetry_metric_exports_total\{result="exported"\} [1-9]/m);
  });
});

describe("metrics over OTLP at a graceful stop", () => {
  beforeAll(() =>
    fake.setFallback(() => reply.text("ok", { input_tokens: 1234, output_tokens: 5 })),
  );
  afterAll(() => fake.setFallback(null));

  it("sends the final values when the host stops, long before the next tick", async () => {
    const receiver = await startOtlpReceiver();
    // The default interval (60 s): no tick comes during this test.
    const rt = await host(receiver.metricsUrl, { OTEL_METRIC_EXPORT_INTERVAL: "" });
    try {
      expect(rt.host.services.metricExport!.settings.intervalMs).toBe(60_000);
      await promptAndWait(rt, "one", { timeoutMs: 10_000 });
      expect(receiver.metricExports).toHaveLength(0);
    } finally {
      await rt.close();
    }
    try {
      expect(receiver.metricExports).toHaveLength(1);
      const usage = receiver.metricExports[0]!.metrics.find(
        (m) => m.name === "gen_ai.client.token.usage",
      )!;
      const input = usage.points.find((p) => p.attributes["gen_ai.token.type"] === "input")!;
      expect(input).toMatchObject({ count: 1, sum: 1234 });
    } finally {
      await receiver.close();
    }
  }, 60_000);
});

describe("metrics over OTLP to a collector that does not answer", () => {
  async function drive(rt: TestRuntime, turns: number): Promise<void> {
    for (let i = 0; i < turns; i++) await promptAndWait(rt, `turn ${i}`);
  }
  beforeAll(() => fake.setFallback(() => reply.text("ok")));
  afterAll(() => fake.setFallback(null));

  it("black-holed: turns go on, failed exports are counted, one at most in flight", async () => {
    const hole = await startOtlpReceiver("blackhole");
    const rt = await host(hole.metricsUrl, { OTEL_METRIC_EXPORT_TIMEOUT: "150" });
    try {
      await drive(rt, 4);
      const exp = rt.host.services.metricExport!;
      const stats = await waitFor(() => {
        const s = exp.stats();
        return s.failed >= 2 ? s : null;
      });
      expect(stats.exported).toBe(0);
      // Nothing queues up: every request the hole saw is one tick's single export.
      expect(hole.requests).toBeLessThanOrEqual(stats.failed + 1);
      const m = (await rt.req("GET", "/metrics")).json as string;
      expect(m).toMatch(/^holon_telemetry_metric_exports_total\{result="failed"\} [1-9]/m);
      expect(m).toMatch(/^holon_telemetry_metric_exports_total\{result="exported"\} 0$/m);
    } finally {
      await rt.close();
      await hole.close();
    }
  }, 60_000);

  it("down: exports fail at once, turns go on, the failures are counted", async () => {
    const gone = await startOtlpReceiver();
    const url = gone.metricsUrl;
    await gone.close();
    const rt = await host(url);
    try {
      await drive(rt, 3);
      await waitFor(() => rt.host.services.metricExport!.stats().failed > 0, {
        what: "a failed export to be counted",
      });
    } finally {
      await rt.close();
    }
  }, 60_000);
});

describe("metric export settings", () => {
  it("come from config.json, with the standard OTEL_* variables winning", () => {
    const file = {
      otlp_enabled: true,
      otlp_endpoint: "http://collector.example:4318/v1/metrics",
      otlp_headers: { "x-key": "from-config" },
    };
    expect(metricExportSettings(file, {})).toMatchObject({
      enabled: true,
      endpoint: "http://collector.example:4318/v1/metrics",
      headers: { "x-key": "from-config" },
      intervalMs: 60_000,
      refused: null,
    });
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://other:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "x-key=from%20env",
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: "x-two=2",
      OTEL_METRIC_EXPORT_INTERVAL: "5000",
    };
    expect(metricExportSettings(file, env)).toMatchObject({
      endpoint: "http://other:4318/v1/metrics",
      headers: { "x-key": "from env", "x-two": "2" },
      intervalMs: 5000,
    });
    expect(
      metricExportSettings(file, { ...env, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "http://m/x" })
        .endpoint,
    ).toBe("http://m/x");
    // OTEL_METRICS_EXPORTER: none wins over config, otlp turns it on without config
    expect(metricExportSettings(file, { OTEL_METRICS_EXPORTER: "none" }).enabled).toBe(false);
    expect(metricExportSettings({}, { OTEL_METRICS_EXPORTER: "otlp" }).enabled).toBe(true);
    expect(metricExportSettings(file, { OTEL_METRICS_EXPORTER: "console" })).toMatchObject({
      enabled: false,
      refused: "OTEL_METRICS_EXPORTER console is not supported (only otlp or none)",
    });
    expect(metricExportSettings(file, { OTEL_SDK_DISABLED: "true" }).enabled).toBe(false);
    expect(metricExportSettings(file, { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }).enabled).toBe(false);
    expect(metricExportSettings({}, {}).enabled).toBe(false);
    expect(metricExportSettings(undefined, {}).enabled).toBe(false);
  });
});
