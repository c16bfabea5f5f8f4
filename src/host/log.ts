// The runtime's own log: JSON lines under <holon_home>/logs/holon.log. It records the
// host's lifecycle and the runtime events an operator debugging a daemon wants first;
// the full history stays in the event log. Credentials never reach it (events carry none).
//
// A line at info is short and bounded whatever the event carried: a busy host ends a turn
// many times a second, and a turn's line once held its reply (the soak wrote 10 MB of log
// in 20 minutes). Ids, outcome, durations and token counts go at info; the whole payload,
// reply text included, only at debug (HOLON_LOG_LEVEL=debug).
import { join } from "node:path";
import { pino, type Level, type Logger } from "pino";
import type { EventEnvelope, EventPayload, EventType } from "../domain/events.ts";
import type { Store } from "../store/db.ts";
import { LogFile, logLimits, type LogLimits } from "./log-rotation.ts";

/** Event types worth a log line. */
const LOGGED: ReadonlySet<EventType> = new Set<EventType>([
  "runtime_error",
  "turn_terminal",
  "control_applied",
  "message_interrupted",
  "task_status_updated",
  "task_reattached_after_restart",
  "current_run_abort_requested",
  "runtime_service_shutdown_requested",
  "retention_applied",
  "storage_outage",
]);

const LEVELS: readonly string[] = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/** The level `HOLON_LOG_LEVEL` names (trace … fatal, or silent); info when unset or unknown. */
export function logLevel(env: NodeJS.ProcessEnv = process.env): Level | "silent" {
  const v = env.HOLON_LOG_LEVEL?.trim().toLowerCase();
  return v && LEVELS.includes(v) ? (v as Level | "silent") : "info";
}

/**
 * Rotates at `retention.logs` (max_file_mb, max_files) as config.json sets them at open.
 * Writing is best-effort (log-rotation.ts): a failing disk costs log lines, never the host.
 */
export function openLog(
  home: string,
  limits: LogLimits = logLimits(home),
  report?: (message: string) => void,
  level: Level | "silent" = logLevel(),
): Logger {
  const destination = new LogFile(join(home, "logs", "holon.log"), limits, report);
  return pino(
    { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
}

/** The file a log from openLog writes (its write statistics, for tests and status). */
export function logFileOf(log: Logger): LogFile {
  return (log as unknown as Record<symbol, LogFile>)[pino.symbols.streamSym];
}

/**
 * Mirror selected runtime events into the log, and the store's health as it changes (an
 * outage's end is the `storage_outage` event; its start can only be logged, as the store
 * cannot record it). Returns the unsubscribe function.
 */
export function logEvents(store: Store, log: Logger): () => void {
  const unhealth = store.health.onChange((state) => {
    const s = store.health.status();
    if (state === "ok") log.info({ storage: state }, "storage writable again");
    else log.error({ storage: state, since: s.since, error: s.error }, `storage ${state}`);
  });
  const unevents = store.onEvents((events) => {
    for (const e of events) {
      if (!LOGGED.has(e.type)) continue;
      const level = e.type === "runtime_error" ? "error" : "info";
      const ids = { agent_id: e.agent_id, event_seq: e.event_seq, event: e.type };
      log[level]({ ...ids, ...brief(e) }, e.type);
      if (log.isLevelEnabled("debug")) log.debug({ ...ids, payload: e.payload }, e.type);
    }
  });
  return () => {
    unhealth();
    unevents();
  };
}

/** Characters of any one text field at info. */
const TEXT_CHARS = 200;
/** Items of a list and keys of a record at info (counts per event type fit), and depth. */
const LIST_ITEMS = 8;
const KEYS = 64;
const DEPTH = 3;

/** The info fields of an event: a fixed few for the frequent ones, else its payload bounded. */
function brief(e: EventEnvelope): Record<string, unknown> {
  switch (e.type) {
    case "turn_terminal": {
      const p = e.payload as EventPayload<"turn_terminal">;
      const out: Record<string, unknown> = {
        run_id: p.run_id,
        turn_index: p.turn_index,
        outcome: p.kind,
        duration_ms: p.duration_ms,
        model_rounds: p.model_rounds,
        reply_chars: p.last_assistant_message.length,
      };
      if (p.reason) out.reason = bounded(p.reason, 0);
      if (p.retry_at) out.retry_at = p.retry_at;
      if (p.token_usage) {
        out.input_tokens = p.token_usage.input_tokens;
        out.output_tokens = p.token_usage.output_tokens;
        if (p.token_usage.cache_read_input_tokens !== undefined)
          out.cached_input_tokens = p.token_usage.cache_read_input_tokens;
      }
      return out;
    }
    case "task_status_updated": {
      const t = (e.payload as EventPayload<"task_status_updated">).task;
      const out: Record<string, unknown> = { task_id: t.task_id, kind: t.kind, status: t.status };
      if (t.exit_status) out.exit_status = bounded(t.exit_status, 1);
      if (t.failure) out.failure = bounded(t.failure, 1);
      return out;
    }
    default: {
      const {
        provider_attempt_timeline: _t,
        envelope: _e,
        ...rest
      } = e.payload as Record<string, unknown>;
      return { payload: bounded(rest, 0) };
    }
  }
}

/** `value` with long texts cut, long lists and records shortened, and deep records elided. */
function bounded(value: unknown, depth: number): unknown {
  if (typeof value === "string") {
    return value.length > TEXT_CHARS ? value.slice(0, TEXT_CHARS) + "…" : value;
  }
  if (value === null || typeof value !== "object") return value;
  if (depth >= DEPTH) return "…";
  if (Array.isArray(value)) {
    const items = value.slice(0, LIST_ITEMS).map((v) => bounded(v, depth + 1));
    if (value.length > LIST_ITEMS) items.push(`… ${value.length - LIST_ITEMS} more`);
    return items;
  }
  const entries = Object.entries(value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of entries.slice(0, KEYS)) out[k] = bounded(v, depth + 1);
  if (entries.length > KEYS) out["…"] = `${entries.length - KEYS} more`;
  return out;
}
