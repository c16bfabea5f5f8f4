// The runtime's own log: JSON lines under <holon_home>/logs/holon.log. It records the
// host's lifecycle and the runtime events an operator debugging a daemon wants first;
// the full history stays in the event log. Credentials never reach it (events carry none).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { pino, type Logger } from "pino";
import type { EventType } from "../domain/events.ts";
import type { Store } from "../store/db.ts";
import { logLimits, rotateBySize, type LogLimits } from "./log-rotation.ts";

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
]);

/** Rotates at `retention.logs` (max_file_mb, max_files) as config.json sets them at open. */
export function openLog(home: string, limits: LogLimits = logLimits(home)): Logger {
  mkdirSync(join(home, "logs"), { recursive: true, mode: 0o700 });
  const file = join(home, "logs", "holon.log");
  const destination = rotateBySize(
    pino.destination({
      dest: file,
      mode: 0o600, // other users of the machine must not read the runtime's log
      sync: false,
    }),
    file,
    limits,
  );
  return pino(
    { base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime },
    destination,
  );
}

/** Mirror selected runtime events into the log. Returns the unsubscribe function. */
export function logEvents(store: Store, log: Logger): () => void {
  return store.onEvents((events) => {
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
