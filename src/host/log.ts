// The runtime's own log: JSON lines under <holon_home>/logs/holon.log. It records the
// host's lifecycle and the runtime events an operator debugging a daemon wants first;
// the full history stays in the event log. Credentials never reach it (events carry none).
import { join } from "node:path";
import { pino, type Logger } from "pino";
import type { EventType } from "../domain/events.ts";
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

/**
 * Rotates at `retention.logs` (max_file_mb, max_files) as config.json sets them at open.
 * Writing is best-effort (log-rotation.ts): a failing disk costs log lines, never the host.
 */
export function openLog(
  home: string,
  limits: LogLimits = logLimits(home),
  report?: (message: string) => void,
): Logger {
  const destination = new LogFile(join(home, "logs", "holon.log"), limits, report);
  return pino(
    { base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime },
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
      log[level](
        {
          agent_id: e.agent_id,
          event_seq: e.event_seq,
          event: e.type,
          payload: summarize(e.payload),
        },
        e.type,
      );
    }
  });
  return () => {
    unhealth();
    unevents();
  };
}

/** Keep log lines small: drop bulky fields such as attempt timelines and previews. */
function summarize(payload: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(payload)) {
    if (k === "provider_attempt_timeline" || k === "envelope") continue;
    out[k] = typeof v === "string" && v.length > 500 ? v.slice(0, 500) + "…" : v;
  }
  return out;
}
