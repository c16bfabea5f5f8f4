// The OpenTelemetry SDK costs nothing while traces are off: a real `holon run`, watched from
// outside by a module-resolution hook, never resolves an @opentelemetry module; with traces
// on it does. A Node older than the SDK needs refuses to turn traces on, in one line.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HOLON_BIN, runCli, tempHome } from "./helpers/home.ts";
import { reply } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { Tracing, traceSettings } from "../src/telemetry/tracing.ts";

const fake = useFakeProvider();

const HOOKS = `import { registerHooks } from "node:module";
registerHooks({
  resolve(specifier, context, next) {
    if (specifier.startsWith("@opentelemetry/"))
      process.stderr.write("otel-resolved:" + specifier + "\\n");
    return next(specifier, context);
  },
});
`;

const TRACES_ON: [string, string][] = [
  ["telemetry.traces.enabled", "true"],
  // a collector that is not there: the run must not wait for it
  ["telemetry.traces.endpoint", "http://127.0.0.1:9/v1/traces"],
];
const OTLP_METRICS_ON: [string, string][] = [
  ["telemetry.metrics.otlp_enabled", "true"],
  ["telemetry.metrics.otlp_endpoint", "http://127.0.0.1:9/v1/metrics"],
];

async function run(traces: boolean | [string, string][]): Promise<string> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const settings = traces === true ? TRACES_ON : traces === false ? [] : traces;
  for (const [k, v] of settings) {
    const r = await runCli(["config", "set", k, v], { env: { HOLON_HOME: home } });
    expect(r.code, r.stderr).toBe(0);
  }
  const hooks = join(home, "otel-hooks.mjs");
  writeFileSync(hooks, HOOKS);
  fake.enqueue(reply.text("hello back"));
  const r = await runCli([], {
    exec: [process.execPath, "--import", hooks, HOLON_BIN, "run", "--home", home, "hello"],
    env: { OTEL_EXPORTER_OTLP_TIMEOUT: "500" },
  });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain("hello back");
  return r.stderr;
}

describe("the OpenTelemetry SDK", () => {
  it("is never loaded while traces are off", async () => {
    expect(await run(false)).not.toContain("otel-resolved:");
  });

  it("is loaded when traces are on, and a dead collector does not hold the run", async () => {
    const stderr = await run(true);
    expect(stderr).toContain("otel-resolved:@opentelemetry/sdk-trace");
    expect(stderr).toContain("otel-resolved:@opentelemetry/exporter-trace-otlp-proto");
  });

  it("is never loaded with only /metrics on, and only the OTLP pieces with the metrics export on", async () => {
    expect(await run([["telemetry.metrics.enabled", "true"]])).not.toContain("otel-resolved:");
    const stderr = await run(OTLP_METRICS_ON);
    expect(stderr).toContain("otel-resolved:@opentelemetry/otlp-transformer");
    expect(stderr).toContain("otel-resolved:@opentelemetry/otlp-exporter-base/node-http");
    expect(stderr).not.toContain("otel-resolved:@opentelemetry/exporter-trace-otlp-proto");
  });

  it("stays off on a Node older than it needs, saying so in one line", async () => {
    const lines: string[] = [];
    const t = new Tracing({
      store: undefined as never, // never reached: nothing loads
      settings: traceSettings({ enabled: true }, {}),
      price: () => null,
      nodeVersion: "22.13.1",
      warn: (l) => lines.push(l),
    });
    await t.ready;
    expect(t.enabled).toBe(false);
    expect(lines).toEqual([
      "traces need Node.js 22.15 or newer (this is 22.13.1); telemetry.traces stays off",
    ]);
  });

  it("takes its settings from config.json, with the standard OTEL_* variables winning", () => {
    const file = {
      enabled: true,
      endpoint: "http://collector.example:4318/v1/traces",
      headers: { "x-key": "from-config" },
    };
    expect(traceSettings(file, {})).toMatchObject({
      enabled: true,
      endpoint: "http://collector.example:4318/v1/traces",
      headers: { "x-key": "from-config" },
      captureContent: false,
      maxQueueSpans: 2048,
    });
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://other:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "x-key=from%20env,x-two=2",
      OTEL_BSP_MAX_QUEUE_SIZE: "100",
      OTEL_SERVICE_NAME: "svc",
    };
    expect(traceSettings(file, env)).toMatchObject({
      endpoint: "http://other:4318/v1/traces",
      headers: { "x-key": "from env", "x-two": "2" },
      maxQueueSpans: 100,
      serviceName: "svc",
    });
    expect(
      traceSettings(file, { ...env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t/x" }).endpoint,
    ).toBe("http://t/x");
    expect(traceSettings(file, { OTEL_SDK_DISABLED: "true" })).toMatchObject({
      enabled: false,
      refused: "OTEL_SDK_DISABLED is true",
    });
    expect(traceSettings(file, { OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }).enabled).toBe(false);
    expect(traceSettings({}, {}).enabled).toBe(false);
  });
});
