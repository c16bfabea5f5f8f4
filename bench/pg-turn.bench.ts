// What keeping the records in Postgres costs a turn. Two `holon serve` hosts from this
// checkout, one on its SQLite file and one on a Postgres database on loopback (a private
// server, as the tests start one: test/helpers/postgres.ts), answer the same one-round text
// turns from the scripted fake provider, alternately, one turn at a time. Per turn: the wall
// time from the prompt's POST to the message's `message_processed` event on the host's event
// stream (no polling, which would itself cost store reads), and the host's CPU.
// The store time Postgres adds per text turn is the difference of the two hosts' p50 wall
// times; the statements' round trip through the connection's worker thread is timed on its
// own (`SELECT 1`), and the commits per turn counted from the server's statistics.
//
// Options: `--turns=N` (default 60; 20 with --quick). Needs Debian's postgresql (skipped,
// with a note, without it).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ResultBuilder, type Benchmark } from "./lib/types.ts";
import {
  authHeaders,
  configureFakeProvider,
  cpuSeconds,
  expectOk,
  startHolon,
  type ServerProc,
} from "./lib/proc.ts";
import { round, summarize } from "./lib/stats.ts";
import { reply, startFakeProvider } from "../test/fake-provider/server.ts";
import { freshDatabaseUrl, postgresAvailable, psqlQuery } from "../test/helpers/postgres.ts";
import { PgDatabase } from "../src/store/pg.ts";

type Side = {
  name: string;
  server: ServerProc;
  wall: number[];
  cpu: number[];
  /** Message ids seen processed on the host's event stream, and who waits for which. */
  processed: Set<string>;
  waiting: Map<string, () => void>;
  close(): void;
};

/** Follow the host's event stream (SSE): a turn's end is seen without polling the store. */
async function follow(name: string, server: ServerProc): Promise<Side> {
  const ac = new AbortController();
  const res = await fetch(`${server.url}/agents/main/events/stream`, {
    headers: authHeaders(server.url),
    signal: ac.signal,
  });
  const side: Side = {
    name,
    server,
    wall: [],
    cpu: [],
    processed: new Set(),
    waiting: new Map(),
    close: () => ac.abort(),
  };
  void (async () => {
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += dec.decode(value, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const data = frame
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trim())
            .join("\n");
          if (!data) continue;
          const e = JSON.parse(data) as { type?: string; payload?: { message_id?: string } };
          const id = e.payload?.message_id;
          if (e.type === "message_processed" && id) {
            side.processed.add(id);
            side.waiting.get(id)?.();
          }
        }
      }
    } catch {
      // closed
    }
  })();
  return side;
}

async function oneTurn(side: Side, i: number, enqueue: () => void): Promise<void> {
  enqueue();
  const cpu0 = cpuSeconds(side.server.pid);
  const t0 = performance.now();
  const r = await expectOk(`${side.server.url}/control/agents/main/prompt`, "POST", {
    text: `Question ${i}: did the nightly build pass?`,
  });
  const id = r.message_id as string;
  if (!side.processed.has(id)) {
    await new Promise<void>((resolve) => side.waiting.set(id, resolve));
  }
  side.waiting.delete(id);
  side.wall.push(performance.now() - t0);
  side.cpu.push((cpuSeconds(side.server.pid) - cpu0) * 1000);
}

const bench: Benchmark = {
  name: "pg-turn",
  description: "store time per text turn on loopback Postgres against SQLite (needs postgresql)",
  async run(ctx) {
    const r = new ResultBuilder();
    if (!postgresAvailable()) {
      r.note("skipped: no PostgreSQL on this machine (Debian package postgresql)");
      return r.result;
    }
    const turns = Number(ctx.options.turns ?? (ctx.quick ? 20 : 60));
    const url = freshDatabaseUrl();
    const fake = await startFakeProvider();
    const homes = [
      mkdtempSync(join(tmpdir(), "holon-bench-")),
      mkdtempSync(join(tmpdir(), "holon-bench-")),
    ];
    const sides: Side[] = [];
    try {
      for (const home of homes) {
        configureFakeProvider(ctx.root, home, fake.baseUrl("openai"), "fake/gpt-test");
      }
      const sqlite = await startHolon(ctx.root, { home: homes[0] });
      sides.push(await follow("sqlite", sqlite));
      const pg = await startHolon(ctx.root, { home: homes[1], env: { HOLON_DATABASE_URL: url } });
      sides.push(await follow("postgres", pg));
      const answer = (i: number) => () =>
        fake.enqueue(
          reply.text(`Answer ${i}: the build passed and nothing else needs attention.`, {
            input_tokens: 1200,
            output_tokens: 20,
          }),
        );
      // Warm-up (first-use rows, caches, prepared statements), then the measured turns,
      // alternating which host goes first.
      for (let i = 0; i < 5; i++) for (const s of sides) await oneTurn(s, i, answer(i));
      for (const s of sides) {
        s.wall.length = 0;
        s.cpu.length = 0;
      }
      const stats0 = Number(
        psqlQuery(
          url,
          "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
        ),
      );
      for (let i = 0; i < turns; i++) {
        const order = i % 2 === 0 ? sides : [...sides].reverse();
        for (const s of order) await oneTurn(s, 100 + i, answer(100 + i));
      }
      const commits =
        (Number(
          psqlQuery(
            url,
            "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
          ),
        ) -
          stats0) /
        turns;
      const [lite, post] = sides as [Side, Side];
      const w0 = summarize(lite.wall);
      const w1 = summarize(post.wall);
      const c0 = summarize(lite.cpu);
      const c1 = summarize(post.cpu);
      r.metric("sqlite_turn_p50_ms", round(w0.p50), "ms", "text turn, SQLite host, p50");
      r.metric("postgres_turn_p50_ms", round(w1.p50), "ms", "text turn, Postgres host, p50");
      r.metric("postgres_turn_p99_ms", round(w1.p99), "ms", "text turn, Postgres host, p99");
      r.metric(
        "store_time_added_p50_ms",
        round(w1.p50 - w0.p50),
        "ms",
        "store time Postgres adds per text turn (p50 difference)",
      );
      r.metric("sqlite_cpu_per_turn_ms", round(c0.p50), "ms", "host CPU per turn, SQLite, p50");
      r.metric("postgres_cpu_per_turn_ms", round(c1.p50), "ms", "host CPU per turn, Postgres, p50");
      r.metric(
        "postgres_commits_per_turn",
        round(commits, 1),
        "",
        "Postgres commits per text turn",
      );
      r.target(
        "Postgres store time per text turn p50 <= 40 ms (design: ~34 ms)",
        "store_time_added_p50_ms",
        "<=",
        40,
      );

      // The round trip one statement costs through the worker thread.
      const db = new PgDatabase(url);
      try {
        const one = db.prepare("SELECT 1 AS one");
        for (let i = 0; i < 200; i++) one.get();
        const rtt: number[] = [];
        for (let i = 0; i < 2000; i++) {
          const t = performance.now();
          one.get();
          rtt.push(performance.now() - t);
        }
        r.metric(
          "statement_rtt_p50_us",
          round(summarize(rtt).p50 * 1000, 0),
          "µs",
          "one statement's round trip (SELECT 1), p50",
        );
      } finally {
        db.close();
      }
      r.check(
        "every turn answered on both hosts",
        lite.wall.length === turns && post.wall.length === turns,
      );
      return r.result;
    } finally {
      for (const s of sides) {
        s.close();
        await s.server.stop();
      }
      await fake.close();
      for (const h of homes) rmSync(h, { recursive: true, force: true });
    }
  },
};

export default bench;
