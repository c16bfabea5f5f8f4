// Versioned schema migrations. Append new entries; never edit an applied one.

export const MIGRATIONS: { version: number; name: string; sql: string }[] = [
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
];
