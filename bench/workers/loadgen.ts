// Load generator, forked by benchmarks so client work never shares the host's event loop.
// Closed loop: `connections` lanes, each sending its next POST as soon as the previous one
// answers, over one keep-alive http.Agent with maxSockets = connections.
//
// IPC protocol: parent sends LoadConfig; worker answers { type: "result", ...LoadResult }
// (or { type: "error", message }).
import { Agent, request } from "node:http";

export type LoadConfig = {
  hostname: string;
  port: number;
  path: string;
  /** Request body; `{n}` is replaced by a per-request counter. */
  body: string;
  connections: number;
  /** Timed mode: warm up for warmupMs, then measure for durationMs. */
  warmupMs: number;
  durationMs: number;
  /** Count mode (when set): send exactly this many requests, all measured; no time limit. */
  count?: number;
  requestTimeoutMs: number;
};

export type LoadResult = {
  /** Requests that answered 2xx, over the whole run (warm-up included). */
  totalOk: number;
  totalNon2xx: number;
  totalErrors: number;
  statusCounts: Record<string, number>;
  firstError: string | null;
  /** 2xx completions inside the measured window, and the window's length. */
  measuredCount: number;
  measuredSeconds: number;
  /** Latencies (ms) of measured requests, sorted ascending. */
  latencies: number[];
};

function post(agent: Agent, cfg: LoadConfig, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        hostname: cfg.hostname,
        port: cfg.port,
        path: cfg.path,
        method: "POST",
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        timeout: cfg.requestTimeoutMs,
      },
      (res) => {
        res.on("data", () => {});
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(body);
  });
}

async function run(cfg: LoadConfig): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: cfg.connections });
  const start = performance.now();
  const countMode = cfg.count !== undefined;
  const measureFrom = countMode ? start : start + cfg.warmupMs;
  const end = countMode ? Number.POSITIVE_INFINITY : measureFrom + cfg.durationMs;
  const latencies: number[] = [];
  const statusCounts: Record<string, number> = {};
  let issued = 0;
  let totalOk = 0;
  let totalNon2xx = 0;
  let totalErrors = 0;
  let measuredCount = 0;
  let firstError: string | null = null;
  let lastDone = start;

  const lane = async () => {
    for (;;) {
      if (countMode ? issued >= cfg.count! : performance.now() >= end) return;
      const n = issued++;
      const t0 = performance.now();
      try {
        const status = await post(agent, cfg, cfg.body.replace("{n}", String(n)));
        const t1 = performance.now();
        lastDone = t1;
        statusCounts[status] = (statusCounts[status] ?? 0) + 1;
        const ok = status >= 200 && status < 300;
        if (ok) totalOk++;
        else totalNon2xx++;
        if (ok && t1 >= measureFrom && t1 <= end) measuredCount++;
        if (t0 >= measureFrom && t1 <= end) latencies.push(t1 - t0);
      } catch (err) {
        totalErrors++;
        firstError ??= (err as Error).message;
        // A broken connection is reported, not retried in a tight loop.
        if (totalErrors > 1000) return;
      }
    }
  };
  await Promise.all(Array.from({ length: cfg.connections }, lane));
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return {
    totalOk,
    totalNon2xx,
    totalErrors,
    statusCounts,
    firstError,
    measuredCount,
    measuredSeconds: ((countMode ? lastDone : end) - measureFrom) / 1000,
    latencies,
  };
}

process.once("message", (cfg: LoadConfig) => {
  run(cfg).then(
    (result) => process.send!({ type: "result", ...result }, () => process.exit(0)),
    (err: unknown) =>
      process.send!({ type: "error", message: String((err as Error)?.stack ?? err) }, () =>
        process.exit(1),
      ),
  );
});
