// Versioned schema migrations. Append new entries; never edit an applied one.
import type { DatabaseSync } from "node:sqlite";

export type Migration = { version: number; name: string; sql: string };

/** The table that records which migrations a database has (made when it is missing). */
export function migrationsTable(db: DatabaseSync): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
}

/** Run one migration and record it; the caller holds the transaction. */
export function applyMigration(db: DatabaseSync, m: Migration): void {
  db.exec(m.sql);
  db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
    m.version,
    m.name,
    new Date().toISOString(),
  );
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "core runtime records",
    sql: `
      CREATE TABLE agents (
        agent_id TEXT PRIMARY KEY,
        data TEXT NOT NULL
      );

      CREATE TABLE messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        priority_rank INTEGER NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        processed_at TEXT,
        envelope TEXT NOT NULL
      );
      CREATE INDEX messages_queue ON messages (agent_id, status, priority_rank, seq);

      CREATE TABLE events (
        agent_id TEXT NOT NULL,
        event_seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        ts TEXT NOT NULL,
        type TEXT NOT NULL,
        provenance TEXT NOT NULL,
        payload TEXT NOT NULL,
        PRIMARY KEY (agent_id, event_seq)
      ) WITHOUT ROWID;

      CREATE TABLE briefs (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX briefs_agent ON briefs (agent_id, seq);

      CREATE TABLE transcript (
        agent_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (agent_id, seq)
      ) WITHOUT ROWID;

      CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX tasks_agent ON tasks (agent_id, status);
    `,
  },
  {
    version: 2,
    name: "deadlines",
    sql: `
      CREATE TABLE deadlines (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT,
        due_at TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX deadlines_due ON deadlines (due_at);
      CREATE INDEX deadlines_owner ON deadlines (agent_id, kind);
      CREATE UNIQUE INDEX deadlines_key ON deadlines (key) WHERE key IS NOT NULL;
    `,
  },
  {
    version: 3,
    name: "history that stays fast and bounded",
    // Events and transcript become rowid tables: their rows (often over 1 KB) spilled into
    // overflow pages as WITHOUT ROWID rows, doubling their size on disk, and the rowid gives
    // the global insertion order that retention removes from. Provenance and payload (and a
    // transcript entry's fields) share one encoded body (store/codec.ts: JSON text, or a
    // compressed blob when large); times are epoch milliseconds and event types small ids
    // (`event_types`), because a turn writes a dozen events and these columns were a third of
    // each row. The copy keeps each agent's rows in sequence order while interleaving agents
    // by time. The other tables gain the indexes their hot reads need, a
    // per-family size tally kept by triggers (for size-based retention without scans), and a
    // record of what retention removed (so sequences never restart and replay can say so).
    sql: `
      CREATE TABLE event_types (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
      INSERT INTO event_types (name) SELECT DISTINCT type FROM events ORDER BY type;
      CREATE TABLE events_v3 (
        agent_id TEXT NOT NULL,
        event_seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        ts INTEGER NOT NULL,
        type_id INTEGER NOT NULL,
        body NOT NULL
      );
      INSERT INTO events_v3 (agent_id, event_seq, id, ts, type_id, body)
        SELECT agent_id, event_seq, id,
          CAST(ROUND((julianday(ts) - 2440587.5) * 86400000) AS INTEGER),
          (SELECT t.id FROM event_types t WHERE t.name = type),
          json_array(json(provenance), json(payload))
        FROM (
          SELECT *, MAX(ts) OVER (PARTITION BY agent_id ORDER BY event_seq) AS order_ts
          FROM events
        )
        ORDER BY order_ts, agent_id, event_seq;
      DROP TABLE events;
      ALTER TABLE events_v3 RENAME TO events;
      CREATE UNIQUE INDEX events_agent_seq ON events (agent_id, event_seq);

      CREATE TABLE transcript_v3 (
        agent_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        run_id TEXT,
        body NOT NULL
      );
      INSERT INTO transcript_v3 (agent_id, seq, id, created_at, run_id, body)
        SELECT agent_id, seq, id,
          CAST(ROUND((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER), run_id,
          json_object('kind', kind, 'message_id', message_id, 'data', json(data_obj))
        FROM (
          SELECT agent_id, seq, id,
            json_extract(data, '$.created_at') AS created_at,
            json_extract(data, '$.run_id') AS run_id,
            json_extract(data, '$.kind') AS kind,
            json_extract(data, '$.message_id') AS message_id,
            json_extract(data, '$.data') AS data_obj,
            MAX(json_extract(data, '$.created_at'))
              OVER (PARTITION BY agent_id ORDER BY seq) AS order_ts
          FROM transcript
        )
        ORDER BY order_ts, agent_id, seq;
      DROP TABLE transcript;
      ALTER TABLE transcript_v3 RENAME TO transcript;
      CREATE UNIQUE INDEX transcript_agent_seq ON transcript (agent_id, seq);
      CREATE INDEX transcript_run ON transcript (run_id, seq) WHERE run_id IS NOT NULL;

      CREATE INDEX messages_agent ON messages (agent_id);
      DROP INDEX tasks_agent;
      CREATE INDEX tasks_agent ON tasks (agent_id);
      CREATE INDEX tasks_active ON tasks (agent_id) WHERE status IN ('queued', 'running');

      CREATE TABLE retention_floors (
        agent_id TEXT NOT NULL,
        family TEXT NOT NULL,
        removed_through INTEGER NOT NULL,
        removed_count INTEGER NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (agent_id, family)
      ) WITHOUT ROWID;

      CREATE TABLE store_stats (
        family TEXT PRIMARY KEY,
        row_count INTEGER NOT NULL,
        bytes INTEGER NOT NULL
      ) WITHOUT ROWID;
      INSERT INTO store_stats (family, row_count, bytes)
        SELECT 'events', COUNT(*), COALESCE(SUM(octet_length(body) + octet_length(id) + octet_length(agent_id) + 32), 0) FROM events;
      INSERT INTO store_stats (family, row_count, bytes)
        SELECT 'transcript', COUNT(*), COALESCE(SUM(octet_length(body) + octet_length(id) + 2 * octet_length(agent_id) + 64), 0) FROM transcript;
      INSERT INTO store_stats (family, row_count, bytes)
        SELECT 'messages', COUNT(*), COALESCE(SUM(octet_length(envelope) + 3 * octet_length(id) + 2 * octet_length(agent_id) + 80), 0) FROM messages;
      INSERT INTO store_stats (family, row_count, bytes)
        SELECT 'briefs', COUNT(*), COALESCE(SUM(octet_length(data) + 2 * octet_length(id) + 2 * octet_length(agent_id) + 24), 0) FROM briefs;

      CREATE TRIGGER events_tally_insert AFTER INSERT ON events BEGIN
        UPDATE store_stats SET row_count = row_count + 1, bytes = bytes + octet_length(NEW.body) + octet_length(NEW.id) + octet_length(NEW.agent_id) + 32 WHERE family = 'events';
      END;
      CREATE TRIGGER events_tally_delete AFTER DELETE ON events BEGIN
        UPDATE store_stats SET row_count = row_count - 1, bytes = bytes - (octet_length(OLD.body) + octet_length(OLD.id) + octet_length(OLD.agent_id) + 32) WHERE family = 'events';
      END;
      CREATE TRIGGER transcript_tally_insert AFTER INSERT ON transcript BEGIN
        UPDATE store_stats SET row_count = row_count + 1, bytes = bytes + octet_length(NEW.body) + octet_length(NEW.id) + 2 * octet_length(NEW.agent_id) + 64 WHERE family = 'transcript';
      END;
      CREATE TRIGGER transcript_tally_delete AFTER DELETE ON transcript BEGIN
        UPDATE store_stats SET row_count = row_count - 1, bytes = bytes - (octet_length(OLD.body) + octet_length(OLD.id) + 2 * octet_length(OLD.agent_id) + 64) WHERE family = 'transcript';
      END;
      CREATE TRIGGER messages_tally_insert AFTER INSERT ON messages BEGIN
        UPDATE store_stats SET row_count = row_count + 1, bytes = bytes + octet_length(NEW.envelope) + 3 * octet_length(NEW.id) + 2 * octet_length(NEW.agent_id) + 80 WHERE family = 'messages';
      END;
      CREATE TRIGGER messages_tally_delete AFTER DELETE ON messages BEGIN
        UPDATE store_stats SET row_count = row_count - 1, bytes = bytes - (octet_length(OLD.envelope) + 3 * octet_length(OLD.id) + 2 * octet_length(OLD.agent_id) + 80) WHERE family = 'messages';
      END;
      CREATE TRIGGER briefs_tally_insert AFTER INSERT ON briefs BEGIN
        UPDATE store_stats SET row_count = row_count + 1, bytes = bytes + octet_length(NEW.data) + 2 * octet_length(NEW.id) + 2 * octet_length(NEW.agent_id) + 24 WHERE family = 'briefs';
      END;
      CREATE TRIGGER briefs_tally_delete AFTER DELETE ON briefs BEGIN
        UPDATE store_stats SET row_count = row_count - 1, bytes = bytes - (octet_length(OLD.data) + 2 * octet_length(OLD.id) + 2 * octet_length(OLD.agent_id) + 24) WHERE family = 'briefs';
      END;
    `,
  },
  {
    version: 5,
    name: "work items",
    // Work items (one row per item; the record is the JSON body, with the columns the
    // queue reads), their promoted completion reports, and per-agent work state (the
    // runaway guard's counter). Completed items are bounded per agent (store/work-items.ts).
    sql: `
      CREATE TABLE work_items (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        state TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX work_items_agent ON work_items (agent_id, state);

      CREATE TABLE delivery_summaries (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        work_item_id TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX delivery_summaries_item ON delivery_summaries (work_item_id);
      CREATE INDEX delivery_summaries_agent ON delivery_summaries (agent_id);

      CREATE TABLE work_agent_state (
        agent_id TEXT PRIMARY KEY,
        data TEXT NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 6,
    name: "timers and external trigger capabilities",
    // Active timers are listed soonest first and counted per agent; finished ones newest
    // first and pruned. A trigger is found by its agent or by its token's hash.
    sql: `
      CREATE TABLE timers (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        next_fire_at TEXT,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX timers_active ON timers (agent_id, next_fire_at, id) WHERE status = 'active';
      CREATE INDEX timers_finished ON timers (agent_id, updated_at, id) WHERE status != 'active';

      CREATE TABLE external_triggers (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        token_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX external_triggers_agent ON external_triggers (agent_id, status, created_at);
    `,
  },
  {
    version: 7,
    name: "workspaces, worktrees and skill activations",
    sql: `
      CREATE TABLE workspaces (
        workspace_id TEXT PRIMARY KEY,
        anchor TEXT NOT NULL UNIQUE,
        data TEXT NOT NULL
      );
      CREATE TABLE agent_workspaces (
        agent_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        attached_at TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (agent_id, workspace_id)
      ) WITHOUT ROWID;
      CREATE TABLE worktrees (
        worktree_id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX worktrees_agent ON worktrees (agent_id, worktree_id);
      CREATE TABLE agent_skills (
        agent_id TEXT NOT NULL,
        skill_id TEXT NOT NULL,
        state TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (agent_id, skill_id)
      ) WITHOUT ROWID;
      CREATE INDEX agent_skills_state ON agent_skills (state, agent_id);
    `,
  },
  {
    version: 8,
    name: "usage: model rounds by agent and time (withdrawn)",
    // First a partial index over the model-round events by (agent_id, ts). Withdrawn: the
    // events' layout is the events repository's to change (type ids, epoch times), and an
    // index naming its columns here would break that. Usage reads through the agent's
    // (agent_id, event_seq) index instead. A home that ran the first version keeps a
    // harmless index; dropping it here would fail where the columns no longer exist.
    sql: `SELECT 1;`,
  },
  {
    version: 9,
    name: "agent plane: tombstones of deleted agents",
    sql: `
      CREATE TABLE agent_tombstones (
        agent_id TEXT NOT NULL,
        deleted_at TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX agent_tombstones_agent ON agent_tombstones (agent_id);
    `,
  },
  {
    version: 10,
    name: "memory: working memory and context episodes",
    sql: `
      CREATE TABLE working_memory (agent_id TEXT PRIMARY KEY, data TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE context_episodes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        agent_id TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX context_episodes_agent ON context_episodes (agent_id, seq);
    `,
  },
  {
    version: 11,
    name: "asks: durable operator requests",
    sql: `
      CREATE TABLE asks (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        state TEXT NOT NULL,
        holding INTEGER NOT NULL,
        gates_agent INTEGER NOT NULL,
        work_item_id TEXT,
        created_at TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX asks_agent_holding ON asks (agent_id, holding, created_at);
      CREATE INDEX asks_item ON asks (work_item_id, holding) WHERE work_item_id IS NOT NULL;
      CREATE INDEX asks_state ON asks (state, created_at);
      CREATE INDEX asks_created ON asks (created_at);
    `,
  },
  {
    version: 12,
    name: "spend ledger: one row per provider call, kept on its own retention",
    // Times are epoch milliseconds. `agent_path` and `item_path` hold the agent with its
    // ancestors and the work item with its parents' as '/a/b/' so a scope's sum is one
    // query (read once per scope at start; running totals are kept in memory after).
    // (run_id, round, kind) is unique: a round is never counted twice. The marker row asks
    // the host to backfill rows from the model-round events still kept, priced then.
    sql: `
      CREATE TABLE spend_ledger (
        seq INTEGER PRIMARY KEY,
        ts INTEGER NOT NULL,
        agent_id TEXT NOT NULL,
        run_id TEXT,
        round INTEGER,
        kind TEXT NOT NULL,
        work_item_id TEXT,
        agent_path TEXT NOT NULL,
        item_path TEXT NOT NULL,
        model_ref TEXT NOT NULL,
        input_tokens INTEGER NOT NULL,
        cached_input_tokens INTEGER NOT NULL,
        cache_write_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        reasoning_tokens INTEGER NOT NULL,
        cost_usd REAL,
        elapsed_ms INTEGER NOT NULL,
        estimated INTEGER NOT NULL DEFAULT 0
      );
      CREATE UNIQUE INDEX spend_ledger_round ON spend_ledger (run_id, round, kind);
      CREATE INDEX spend_ledger_agent ON spend_ledger (agent_id, ts);
      CREATE INDEX spend_ledger_ts ON spend_ledger (ts);
      CREATE INDEX spend_ledger_item ON spend_ledger (work_item_id) WHERE work_item_id IS NOT NULL;
      CREATE TABLE spend_ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      INSERT INTO spend_ledger_meta (key, value) VALUES ('backfill', 'pending');
    `,
  },
  {
    version: 13,
    name: "approvals: the calls an approval ask holds, and consent grants",
    // A call row's state is its execution state (approved → executing is committed before
    // the call starts). A consent grant is keyed by what it is bound to: the workspace, the
    // entry's name and the SHA-256 of its definition.
    sql: `
      CREATE TABLE approval_calls (
        ask_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (ask_id, call_id)
      );
      CREATE INDEX approval_calls_agent_state ON approval_calls (agent_id, state, created_at);
      CREATE INDEX approval_calls_state ON approval_calls (state, created_at);
      CREATE TABLE consent_grants (
        subject TEXT NOT NULL,
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        digest TEXT NOT NULL,
        state TEXT NOT NULL,
        ask_id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (subject, workspace, name, digest)
      );
      CREATE INDEX consent_grants_ask ON consent_grants (ask_id);
    `,
  },
  {
    version: 14,
    name: "agent groups: each agent's supervision root, as a column",
    // A group is the root of the supervision chain: a private child belongs to its
    // supervisor's group, every other agent (public ones, public children, a `holon run`'s
    // temporary agent) is its own root. A host recovers and runs agents a group at a time
    // (host.ts acquire), and a later cluster hands groups to hosts, so the group is a column
    // with an index; the record's JSON carries it too, so a row read back is whole. Existing
    // rows are walked from their roots down the private-child links (through a temporary
    // table with an index, so the walk is linear in the agents); an agent on a broken or
    // circular chain becomes its own root.
    sql: `
      ALTER TABLE agents ADD COLUMN group_id TEXT;
      CREATE TEMP TABLE group_walk (agent_id TEXT PRIMARY KEY, supervisor TEXT) WITHOUT ROWID;
      INSERT INTO group_walk (agent_id, supervisor)
        SELECT agent_id,
               CASE WHEN json_extract(data, '$.visibility') = 'private'
                    THEN json_extract(data, '$.supervisor_agent_id') END
        FROM agents;
      UPDATE group_walk SET supervisor = NULL
        WHERE supervisor IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM group_walk s WHERE s.agent_id = group_walk.supervisor);
      CREATE INDEX temp.group_walk_supervisor ON group_walk (supervisor);
      WITH RECURSIVE chain (agent_id, group_id) AS (
        SELECT agent_id, agent_id FROM group_walk WHERE supervisor IS NULL
        UNION
        SELECT w.agent_id, chain.group_id FROM group_walk w JOIN chain ON w.supervisor = chain.agent_id
      )
      UPDATE agents SET group_id = chain.group_id FROM chain WHERE chain.agent_id = agents.agent_id;
      UPDATE agents SET group_id = agent_id WHERE group_id IS NULL;
      UPDATE agents SET data = json_set(data, '$.group_id', group_id);
      DROP TABLE temp.group_walk;
      CREATE INDEX agents_group ON agents (group_id, agent_id);
    `,
  },
  {
    version: 18,
    name: "trace links: the span context that caused a message, task, timer or child",
    // Written only while tracing is on (src/telemetry/). A turn that starts later, even
    // after a restart, links its span to the context stored under the message's cause:
    // `msg:<id>` (a traceparent that came with an HTTP request), `task:<id>`, `timer:<id>`,
    // `trigger:<id>`, `agent:<id>` (the tool call that made them). Times are epoch ms;
    // old rows are pruned by age.
    sql: `
      CREATE TABLE trace_links (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        created_at INTEGER NOT NULL
      ) WITHOUT ROWID;
      CREATE INDEX trace_links_created ON trace_links (created_at);
    `,
  },
  {
    version: 15,
    name: "spend ledger: rolled-up days (one row standing for many provider calls)",
    // Over its size cap, retention rolls the oldest whole days (before every open budget
    // window) into one row per agent lineage, work item, model, kind and priced-or-not, at
    // the day's start (UTC). `calls` is how many provider calls a row stands for (1 for a
    // detail row), which the sums count as rounds; `rollup` marks the summary rows.
    sql: `
      ALTER TABLE spend_ledger ADD COLUMN calls INTEGER NOT NULL DEFAULT 1;
      ALTER TABLE spend_ledger ADD COLUMN rollup INTEGER NOT NULL DEFAULT 0;
    `,
  },
];
