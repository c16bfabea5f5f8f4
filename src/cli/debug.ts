// Troubleshooting: `holon debug latency` (where a run's time went, per phase, from the
// events) and the runtime half of `holon config doctor` (daemon, store files and disk,
// checked locally without opening the database: only the host opens it).
import { maskDatabaseUrl, resolveDatabaseUrl } from "../host/database-url.ts";
import { existsSync, readFileSync, statSync, statfsSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseEvent, type EventEnvelope } from "../domain/events.ts";
import { pidAlive } from "../host/lock.ts";
import { homePaths } from "../host/paths.ts";
import { call, connect, tryConnect, type ClientFlags, agentOrDefault } from "./connect.ts";
import { CliError, printJson } from "./output.ts";

// ---------------------------------------------------------------------------
// holon debug latency

export type RunLatency = {
  run_id: string;
  message_id: string;
  started_at: string;
  queue_wait_ms: number | null;
  context_build_ms: number;
  provider_ms: number;
  provider_rounds: number;
  tool_ms: number;
  tool_calls: number;
  /** Whatever the phases above do not account for (persistence, scheduling, hooks). */
  other_ms: number | null;
  total_ms: number | null;
  outcome: string | null;
};

/** Per-run phase timings from an agent's events (oldest first). */
export function latencyByRun(events: EventEnvelope[]): RunLatency[] {
  const runs = new Map<string, RunLatency>();
  const get = (runId: string, ts: string) => {
    let r = runs.get(runId);
    if (!r) {
      r = {
        run_id: runId,
        message_id: "",
        started_at: ts,
        queue_wait_ms: null,
        context_build_ms: 0,
        provider_ms: 0,
        provider_rounds: 0,
        tool_ms: 0,
        tool_calls: 0,
        other_ms: null,
        total_ms: null,
        outcome: null,
      };
      runs.set(runId, r);
    }
    return r;
  };
  for (const raw of events) {
    const e = parseEvent(raw);
    if (!e) continue;
    switch (e.type) {
      case "message_processing_started": {
        const r = get(e.payload.run_id, e.ts);
        r.message_id = e.payload.message_id;
        r.queue_wait_ms = e.payload.queue_wait_ms;
        break;
      }
      case "turn_context_built":
        get(e.payload.run_id, e.ts).context_build_ms += e.payload.context_build_ms;
        break;
      case "provider_round_completed": {
        const r = get(e.payload.run_id, e.ts);
        r.provider_ms += e.payload.provider_round_ms;
        r.provider_rounds += 1;
        break;
      }
      case "tool_executed":
      case "tool_execution_failed": {
        const r = get(e.payload.run_id, e.ts);
        r.tool_ms += e.payload.duration_ms;
        r.tool_calls += 1;
        break;
      }
      case "message_processed": {
        const r = get(e.payload.run_id, e.ts);
        r.total_ms = e.payload.duration_ms;
        r.outcome = e.payload.outcome;
        r.other_ms = Math.max(0, r.total_ms - r.context_build_ms - r.provider_ms - r.tool_ms);
        break;
      }
      default:
        break; // other events carry no phase timing
    }
  }
  return [...runs.values()];
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const PHASES = [
  "queue_wait_ms",
  "context_build_ms",
  "provider_ms",
  "tool_ms",
  "other_ms",
  "total_ms",
] as const;

export async function latency(
  agent: string | undefined,
  flags: ClientFlags & { limit?: string; json?: boolean },
): Promise<void> {
  const client = connect(flags);
  const agentId = await agentOrDefault(client, agent);
  const limit = Number(flags.limit ?? "2000");
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new CliError("--limit must be an integer from 1 to 10000");
  const res = await call(() =>
    client.call<{ events: EventEnvelope[] }>(
      "GET",
      `/agents/${encodeURIComponent(agentId)}/events?limit=${limit}&order=desc`,
    ),
  );
  const runs = latencyByRun(res.events.reverse()).filter((r) => r.total_ms !== null);
  const summary = Object.fromEntries(
    PHASES.map((p) => {
      const vals = runs.map((r) => r[p]).filter((v): v is number => v !== null);
      return [
        p,
        { p50: percentile(vals, 50), p95: percentile(vals, 95), max: percentile(vals, 100) },
      ];
    }),
  );
  if (flags.json) return printJson({ agent_id: agentId, runs, summary });
  if (runs.length === 0) {
    process.stdout.write(`no finished runs in the last ${limit} events of ${agentId}\n`);
    return;
  }
  const ms = (v: number | null) => (v === null ? "-" : `${Math.round(v)}ms`);
  const rows = [
    ["run", "queue", "context", "model", "rounds", "tools", "calls", "other", "total", "outcome"],
    ...runs
      .slice(-20)
      .map((r) => [
        r.run_id,
        ms(r.queue_wait_ms),
        ms(r.context_build_ms),
        ms(r.provider_ms),
        String(r.provider_rounds),
        ms(r.tool_ms),
        String(r.tool_calls),
        ms(r.other_ms),
        ms(r.total_ms),
        r.outcome ?? "-",
      ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const lines = rows.map((row) => row.map((c, i) => c.padEnd(widths[i]!)).join("  "));
  lines.push("");
  for (const p of PHASES) {
    const s = summary[p]!;
    lines.push(
      `${p.replace(/_ms$/, "").padEnd(14)} p50 ${ms(s.p50)}  p95 ${ms(s.p95)}  max ${ms(s.max)}`,
    );
  }
  lines.push(`(${runs.length} finished run(s) in the last ${limit} events)`);
  process.stdout.write(lines.join("\n") + "\n");
}

// ---------------------------------------------------------------------------
// holon config doctor

export type RuntimeCheck = { check: string; status: "ok" | "warn" | "fail"; detail: string };

/**
 * The checks `holon config doctor` adds to its configuration and provider checks: the
 * runtime (daemon) for this home, the store's files, and the disk under HOLON_HOME.
 */
export async function runtimeChecks(home: string): Promise<RuntimeCheck[]> {
  const paths = homePaths(home);
  const checks: RuntimeCheck[] = [];
  const add = (check: string, status: RuntimeCheck["status"], detail: string) =>
    checks.push({ check, status, detail });

  let runtime: { pid?: number } | undefined;
  try {
    runtime = JSON.parse(readFileSync(paths.runtimeFile, "utf8")) as { pid?: number };
  } catch {
    runtime = undefined;
  }
  if (!runtime)
    add("runtime", "warn", "no runtime is running; start one with `holon daemon start`");
  else if (!runtime.pid || !pidAlive(runtime.pid))
    add(
      "runtime",
      "warn",
      `stale runtime file (pid ${runtime.pid} is gone); \`holon daemon start\` cleans it up`,
    );
  else {
    const client = tryConnect({ home });
    const ok = client
      ? await client.call("GET", "/control/runtime/status").then(
          () => true,
          () => false,
        )
      : false;
    if (ok) add("runtime", "ok", `pid ${runtime.pid} answers`);
    else
      add(
        "runtime",
        "fail",
        `pid ${runtime.pid} is alive but does not answer; see \`holon daemon logs\`, then \`holon daemon restart\``,
      );
  }

  let databaseUrl: string | null = null;
  try {
    databaseUrl = resolveDatabaseUrl(home, process.env);
  } catch (err) {
    add("store", "fail", err instanceof Error ? err.message : String(err));
  }
  if (databaseUrl !== null)
    add("store", "ok", `records in Postgres at ${maskDatabaseUrl(databaseUrl)}`);
  else if (!existsSync(paths.database))
    add("store", "ok", "no database yet (the first start creates it)");
  else {
    const st = statSync(paths.database);
    const wal = existsSync(paths.database + "-wal") ? statSync(paths.database + "-wal").size : 0;
    const open = (st.mode & 0o077) !== 0;
    add(
      "store",
      open ? "warn" : "ok",
      `holon.db ${mb(st.size)}, WAL ${mb(wal)}` +
        (open ? `; readable by other users (chmod 600 ${paths.database})` : ""),
    );
  }
  if (existsSync(home) && (statSync(home).mode & 0o077) !== 0)
    add("store", "warn", `${home} is readable by other users (chmod 700 ${home})`);

  try {
    const fs = statfsSync(existsSync(home) ? home : dirname(home));
    const free = fs.bavail * fs.bsize;
    add(
      "disk",
      free < 512 * 1024 ** 2 ? "fail" : free < 2 * 1024 ** 3 ? "warn" : "ok",
      `${mb(free)} free under HOLON_HOME`,
    );
  } catch (err) {
    add("disk", "warn", `cannot read free space: ${(err as Error).message}`);
  }
  const log = join(paths.logsDir, "holon.log");
  if (existsSync(log)) add("logs", "ok", `holon.log ${mb(statSync(log).size)} (rotated by size)`);
  return checks;
}

function mb(bytes: number): string {
  return bytes >= 1024 ** 3
    ? `${(bytes / 1024 ** 3).toFixed(1)} GiB`
    : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}
