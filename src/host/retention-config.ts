// The `retention` section of config.json: how long each kind of history is kept, by age and
// by total size, and how the runtime log rotates. config-schema.ts folds it into the file
// schema, the effective configuration and the key list; the retention job and the log read
// the effective values. 0 means "no limit" for that dimension.
//
// Every family has both an age and a size limit (test/retention-coverage.test.ts checks it).
// The defaults keep a HOLON_HOME under about 1 GB however busy it is: the size caps add up
// to 656 MB of stored records (the database file is some 20% larger for its indexes),
// 256 MB of finished task output and 50 MB of logs; the ages keep a month of history.
import { z } from "zod";
import type { KeyDef } from "./config-keys.ts";

const Days = z.number().int().min(0, "must be 0 (keep forever) or more days");
const Megabytes = z.number().int().min(0, "must be 0 (no size limit) or more megabytes");

const Limit = z.strictObject({ max_age_days: Days.optional(), max_mb: Megabytes.optional() });

export const RetentionFileSchema = z.strictObject({
  events: Limit.optional(),
  transcript: Limit.optional(),
  messages: Limit.optional(),
  briefs: Limit.optional(),
  episodes: Limit.optional(),
  tasks: Limit.optional(),
  task_output: Limit.optional(),
  trace_links: Limit.optional(),
  ledger: Limit.extend({
    detail_hours: z.number().int().min(0, "must be 0 or more hours").optional(),
  }).optional(),
  logs: z
    .strictObject({
      max_file_mb: z.number().int().min(1, "must be at least 1 MB").optional(),
      max_age_days: Days.optional(),
      max_files: z.number().int().min(1, "keep at least 1 rotated file").optional(),
    })
    .optional(),
  interval_minutes: z.number().int().min(1, "must be at least 1 minute").optional(),
});
export type RetentionFile = z.infer<typeof RetentionFileSchema>;

/** Limits in base units: milliseconds and bytes; null is "no limit". */
export type FamilyLimit = { max_age_ms: number | null; max_bytes: number | null };

export type RetentionPolicy = {
  events: FamilyLimit;
  transcript: FamilyLimit;
  messages: FamilyLimit;
  briefs: FamilyLimit;
  /** Context episodes (and each agent's `.holon/ledger/context_episodes.jsonl` mirror). */
  episodes: FamilyLimit;
  /**
   * Finished task records: one past its age or beyond the cap goes with its output files.
   * Queued and running tasks never go (their bytes count toward the cap all the same).
   */
  tasks: FamilyLimit;
  /** Output files of finished tasks. */
  task_output: FamilyLimit;
  /** Trace links (store/trace-links.ts): what caused a message, task, timer or child. */
  trace_links: FamilyLimit;
  /**
   * Spend ledger rows. Past the age they go; over the size cap the oldest whole days before
   * every open budget window are rolled up into one row per agent, model and day, which
   * budgets and usage reports keep counting (host/retention.ts).
   */
  ledger: FamilyLimit & {
    /** Per-call rows younger than this are never rolled up (`holon usage --rounds` lists them). */
    detail_ms: number;
  };
  /** Rotated log files (holon.log.1, …) older than `max_age_ms` are removed by the job. */
  logs: { max_file_bytes: number; max_files: number; max_age_ms: number | null };
  interval_ms: number;
};

export const RETENTION_DEFAULTS = {
  events: { max_age_days: 30, max_mb: 256 },
  transcript: { max_age_days: 30, max_mb: 128 },
  messages: { max_age_days: 30, max_mb: 64 },
  briefs: { max_age_days: 90, max_mb: 32 },
  episodes: { max_age_days: 90, max_mb: 32 },
  tasks: { max_age_days: 30, max_mb: 64 },
  task_output: { max_age_days: 14, max_mb: 256 },
  trace_links: { max_age_days: 30, max_mb: 16 },
  ledger: { max_age_days: 400, max_mb: 64, detail_hours: 24 },
  logs: { max_file_mb: 10, max_files: 5, max_age_days: 30 },
  interval_minutes: 10,
} as const;

const DAY_MS = 86_400_000;
const MB = 1024 * 1024;

const ms = (days: number) => (days > 0 ? days * DAY_MS : null);
const bytes = (mb: number) => (mb > 0 ? mb * MB : null);

function limit(
  file: z.infer<typeof Limit> | undefined,
  d: { max_age_days: number; max_mb: number },
): FamilyLimit {
  return {
    max_age_ms: ms(file?.max_age_days ?? d.max_age_days),
    max_bytes: bytes(file?.max_mb ?? d.max_mb),
  };
}

export function effectiveRetention(file: RetentionFile | undefined): RetentionPolicy {
  const d = RETENTION_DEFAULTS;
  return {
    events: limit(file?.events, d.events),
    transcript: limit(file?.transcript, d.transcript),
    messages: limit(file?.messages, d.messages),
    briefs: limit(file?.briefs, d.briefs),
    episodes: limit(file?.episodes, d.episodes),
    tasks: limit(file?.tasks, d.tasks),
    task_output: limit(file?.task_output, d.task_output),
    trace_links: limit(file?.trace_links, d.trace_links),
    ledger: {
      ...limit(file?.ledger, d.ledger),
      detail_ms: (file?.ledger?.detail_hours ?? d.ledger.detail_hours) * 3_600_000,
    },
    logs: {
      max_file_bytes: (file?.logs?.max_file_mb ?? d.logs.max_file_mb) * MB,
      max_files: file?.logs?.max_files ?? d.logs.max_files,
      max_age_ms: ms(file?.logs?.max_age_days ?? d.logs.max_age_days),
    },
    interval_ms: (file?.interval_minutes ?? d.interval_minutes) * 60_000,
  };
}

const FAMILY_TEXT = {
  events: "audit events (what the event stream replays)",
  transcript: "transcript entries",
  messages: "finished messages (queued and running ones are never removed)",
  briefs: "briefs",
  episodes: "context episodes (each agent's episode mirror file follows)",
  tasks:
    "the records of finished tasks (each goes with its output files; queued and running tasks never go)",
  ledger: "spend ledger rows (one per provider call); budgets and usage reports count what is kept",
  task_output: "output files of finished tasks (the task keeps its bounded snapshot)",
  trace_links:
    "trace links (the span that caused a message, task, timer, trigger or child; written only while tracing is on)",
} as const;

function familyKeys(family: keyof typeof FAMILY_TEXT): KeyDef[] {
  const d = RETENTION_DEFAULTS[family];
  return [
    {
      key: `retention.${family}.max_age_days`,
      type: "integer",
      default: d.max_age_days,
      description: `Days to keep ${FAMILY_TEXT[family]}; 0 keeps them forever`,
      schema: Days,
    },
    {
      key: `retention.${family}.max_mb`,
      type: "integer",
      default: d.max_mb,
      description:
        family === "ledger"
          ? "Megabytes of spend ledger rows above which the oldest per-call rows are rolled up into one row per agent, model and quarter-hour (budgets and usage totals unchanged); 0 is no limit"
          : `Megabytes of ${FAMILY_TEXT[family]} to keep at most, oldest removed first; 0 is no limit`,
      schema: Megabytes,
    },
  ];
}

export const RETENTION_KEY_DEFS: readonly KeyDef[] = [
  ...familyKeys("events"),
  ...familyKeys("transcript"),
  ...familyKeys("messages"),
  ...familyKeys("briefs"),
  ...familyKeys("episodes"),
  ...familyKeys("tasks"),
  ...familyKeys("task_output"),
  ...familyKeys("trace_links"),
  ...familyKeys("ledger"),
  {
    key: "retention.ledger.detail_hours",
    type: "integer",
    default: RETENTION_DEFAULTS.ledger.detail_hours,
    description:
      "Hours of spend ledger rows kept one per provider call whatever the size cap (holon usage --rounds lists them); older ones may be rolled up",
    schema: z.number().int().min(0),
  },
  {
    key: "retention.logs.max_file_mb",
    type: "integer",
    default: RETENTION_DEFAULTS.logs.max_file_mb,
    description: "Size at which logs/holon.log is rotated (applies from the next start)",
    schema: z.number().int().min(1),
  },
  {
    key: "retention.logs.max_files",
    type: "integer",
    default: RETENTION_DEFAULTS.logs.max_files,
    description: "Rotated log files kept beside holon.log (holon.log.1 is the newest)",
    schema: z.number().int().min(1),
  },
  {
    key: "retention.logs.max_age_days",
    type: "integer",
    default: RETENTION_DEFAULTS.logs.max_age_days,
    description:
      "Days to keep rotated log files (holon.log.1, …); 0 keeps them until the count drops them",
    schema: Days,
  },
  {
    key: "retention.interval_minutes",
    type: "integer",
    default: RETENTION_DEFAULTS.interval_minutes,
    description: "Minutes between retention passes",
    schema: z.number().int().min(1),
  },
];
