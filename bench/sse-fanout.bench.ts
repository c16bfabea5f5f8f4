// SSE fan-out: 100 subscribers on GET /agents/main/events/stream (one forked process, one
// TCP connection each), 10,000 events produced by enqueueing to the paused default agent
// (each enqueue commits exactly one message_admitted event) from a forked load generator.
// Every subscriber must see the produced event_seq range exactly once, in order, and the
// delivery latency (receive time − the event's `ts`) is reported as p50/p99.
import type { LoadConfig, LoadResult } from "./workers/loadgen.ts";
import type { SubscribersResult } from "./workers/sse-subscribers.ts";
import { round } from "./lib/stats.ts";
import { Worker, cpuSeconds, expectOk, startHolon, workerPath } from "./lib/proc.ts";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";

const bench: Benchmark = {
  name: "sse-fanout",
  description: "100 SSE subscribers × 10,000 events: completeness and delivery latency",
  async run(ctx) {
    const r = new ResultBuilder();
    const subscribers = ctx.quick ? 20 : 100;
    const events = ctx.quick ? 1_000 : 10_000;
    const producers = 4;
    const host = await startHolon(ctx.root);
    const subs = new Worker<
      { type: "ready"; connected: number } | ({ type: "result" } & SubscribersResult)
    >(workerPath("sse-subscribers.ts"));
    const load = new Worker<{ type: "result" } & LoadResult>(workerPath("loadgen.ts"));
    try {
      await expectOk(`${host.url}/control/agents/main/control`, "POST", { action: "pause" });
      subs.send({
        type: "open",
        hostname: host.hostname,
        port: host.port,
        path: "/agents/main/events/stream",
        subscribers,
        token: host.token,
      });
      const ready = await subs.next("ready", 30_000);
      ctx.log(`${ready.connected}/${subscribers} subscribers connected`);
      const fromSeq = Number((await expectOk(`${host.url}/agents/main/events?limit=1`)).newest_seq);

      const cfg: LoadConfig = {
        hostname: host.hostname,
        port: host.port,
        path: "/agents/main/enqueue",
        body: JSON.stringify({ text: "fan-out event {n}" }),
        connections: producers,
        warmupMs: 0,
        durationMs: 0,
        count: events,
        requestTimeoutMs: 10_000,
      };
      ctx.log(`producing ${events} events from ${producers} connections`);
      const cpu0 = cpuSeconds(host.pid);
      const t0 = performance.now();
      load.send(cfg);
      const produced = await load.next("result", 300_000);
      const produceSeconds = (performance.now() - t0) / 1000;
      const toSeq = Number((await expectOk(`${host.url}/agents/main/events?limit=1`)).newest_seq);
      subs.send({ type: "finish", fromSeq, toSeq, timeoutMs: 60_000 });
      const got = await subs.next("result", 90_000);
      const hostCpu = cpuSeconds(host.pid) - cpu0;
      ctx.log(
        `delivered: ${got.complete}/${got.subscribers} complete, p50 ${got.latency.p50} ms, p99 ${got.latency.p99} ms`,
      );

      r.metric("subscribers", got.subscribers, "", "subscribers");
      r.metric("events_produced", toSeq - fromSeq, "events", "events produced (event_seq range)");
      r.metric(
        "produce_rate",
        round(produced.totalOk / produceSeconds, 0),
        "events/s",
        "production rate",
      );
      r.metric("deliveries", got.framesReceived, "frames", "frames received (all subscribers)");
      r.metric(
        "delivery_rate",
        round(got.framesReceived / (produceSeconds + got.drainMs / 1000), 0),
        "frames/s",
        "delivered frames per second",
      );
      r.metric("latency.p50_ms", got.latency.p50, "ms", "delivery latency p50");
      r.metric("latency.p90_ms", got.latency.p90, "ms", "delivery latency p90");
      r.metric("latency.p99_ms", got.latency.p99, "ms", "delivery latency p99");
      r.metric("latency.max_ms", got.latency.max, "ms", "delivery latency max");
      r.metric("drain_ms", got.drainMs, "ms", "drain after last enqueue answered");
      r.metric(
        "host_cpu_us_per_delivery",
        round((hostCpu / Math.max(1, got.framesReceived)) * 1e6, 1),
        "µs",
        "host CPU per delivered frame",
      );
      r.target("p99 delivery < 50 ms", "latency.p99_ms", "<", 50);

      const expected = events;
      r.check(
        "every enqueue answered 2xx",
        produced.totalOk === events,
        `2xx ${produced.totalOk}/${events}, statuses ${JSON.stringify(produced.statusCounts)}`,
      );
      r.check(
        "one event per enqueue",
        toSeq - fromSeq === expected,
        `event_seq ${fromSeq} → ${toSeq}`,
      );
      r.check(
        "every subscriber got every event once, in order",
        got.complete === subscribers,
        `${got.complete}/${subscribers} complete; missing ${got.missing}, duplicates ${got.duplicates}, gaps ${got.gaps}, overflowed ${got.overflowed}, closed early ${got.closedEarly}${got.firstProblem ? `; ${got.firstProblem}` : ""}`,
      );
      r.note(
        "latency uses the host's ms-resolution `ts`, so values are ±1 ms; host, producers and subscribers share 2 cores",
      );
    } finally {
      await load.stop();
      await subs.stop();
      await host.stop();
    }
    return r.result;
  },
};
export default bench;
