// What keeps each thing Holon stores bounded: every table of the database and every kind
// of file the runtime writes under HOLON_HOME has one entry here naming its owner, the
// retention rule (`retention.*`, by age and size) or the structural bound that holds it.
// test/retention-coverage.test.ts lists the real tables (sqlite_master) and the real files of
// a home that has worked, and fails on one without an entry: a new table or file kind must
// say here how it stays bounded before it ships.

/** How a table or file kind stays bounded. */
export type Owner =
  /** A retention family of config `retention.<family>` removes it by age and/or size. */
  | { rule: "retention"; family: string }
  /** One row (or file) per live thing, removed with it; the count of those things bounds it. */
  | { rule: "per"; of: string }
  /** Fixed size or a fixed number of rows. */
  | { rule: "fixed"; why: string }
  /** Rebuilt from records that are themselves under retention. */
  | { rule: "derived"; from: string };

export const TABLE_OWNERS: Readonly<Record<string, Owner>> = {
  events: { rule: "retention", family: "events" },
  transcript: { rule: "retention", family: "transcript" },
  messages: { rule: "retention", family: "messages" },
  briefs: { rule: "retention", family: "briefs" },
  context_episodes: { rule: "retention", family: "episodes" },
  tasks: { rule: "retention", family: "tasks" },
  spend_ledger: { rule: "retention", family: "ledger" },
  agent_tombstones: { rule: "retention", family: "events" }, // removed with the events they explain
  agents: { rule: "per", of: "agent (removed by agent delete)" },
  agent_skills: { rule: "per", of: "live agent and active skill (removed by agent delete)" },
  agent_workspaces: {
    rule: "per",
    of: "live agent and attached workspace (removed by agent delete)",
  },
  work_agent_state: { rule: "per", of: "live agent (removed by agent delete)" },
  working_memory: { rule: "per", of: "live agent (removed by agent delete)" },
  retention_floors: {
    rule: "per",
    of: "live agent and retention family, plus one row (its events' floor) per deleted agent id, so a re-created id never repeats an event number",
  },
  deadlines: { rule: "per", of: "armed deadline (removed when it fires or is cancelled)" },
  timers: {
    rule: "per",
    of: "active timer, plus a bounded number of finished ones per live agent (removed by agent delete)",
  },
  external_triggers: {
    rule: "per",
    of: "live trigger, plus a bounded number of revoked ones per live agent (removed by agent delete)",
  },
  work_items: {
    rule: "per",
    of: "open work item, plus the newest completed ones per agent (older ones pruned)",
  },
  asks: {
    rule: "per",
    of: "pending ask, plus the newest 200 closed ones per agent (older ones pruned)",
  },
  approval_calls: {
    rule: "per",
    of: "call of a kept approval ask (settled ones are removed when their ask is pruned)",
  },
  consent_grants: {
    rule: "per",
    of: "operator decision on one workspace definition (hook or MCP server, by its SHA-256)",
  },
  delivery_summaries: { rule: "per", of: "work item (removed with it)" },
  workspaces: { rule: "per", of: "registered workspace" },
  worktrees: { rule: "per", of: "retained worktree (removed when it is cleaned up)" },
  event_types: { rule: "fixed", why: "one row per event kind of the catalog" },
  store_stats: { rule: "fixed", why: "one row per history family" },
  schema_migrations: { rule: "fixed", why: "one row per migration" },
  spend_ledger_meta: { rule: "fixed", why: "the ledger's backfill marker: one row" },
  trace_links: { rule: "retention", family: "trace_links" },
  sqlite_sequence: { rule: "fixed", why: "SQLite's own: one row per AUTOINCREMENT table" },
};

/** A kind of file under HOLON_HOME, matched on its path relative to the home. */
export type FileKind = { pattern: RegExp; owner: Owner };

const AGENT = "agents/[^/]+";

export const FILE_KINDS: readonly FileKind[] = [
  { pattern: /^config\.json$/, owner: { rule: "fixed", why: "the user's configuration" } },
  { pattern: /^credentials\.json$/, owner: { rule: "fixed", why: "the user's credentials" } },
  {
    pattern: /^operator-bindings\.json$/,
    owner: { rule: "per", of: "operator binding, plus a bounded number of revoked ones" },
  },
  { pattern: /^holon\.db$/, owner: { rule: "derived", from: "every table above" } },
  {
    pattern: /^holon\.db-wal$/,
    owner: { rule: "fixed", why: "checkpointed; shrinks back to journal_size_limit (64 MB)" },
  },
  { pattern: /^holon\.db-shm$/, owner: { rule: "fixed", why: "SQLite's WAL index" } },
  {
    pattern: /^run\/(runtime\.json|host\.lock|holon\.sock|control-token)$/,
    owner: { rule: "fixed", why: "one each per running host" },
  },
  {
    // What bubblewrap can do on this machine, cached across hosts (sandbox/probe.ts): one
    // file, rewritten in place, with a size cap on read.
    pattern: /^run\/sandbox-probe\.json$/,
    owner: { rule: "fixed", why: "one probe result per home, overwritten by the next probe" },
  },
  { pattern: /^logs\/holon\.log$/, owner: { rule: "retention", family: "logs" } },
  { pattern: /^logs\/holon\.log\.\d+$/, owner: { rule: "retention", family: "logs" } },
  {
    pattern: new RegExp(`^${AGENT}/AGENTS\\.md$`),
    owner: { rule: "per", of: "agent (its instructions)" },
  },
  {
    pattern: new RegExp(`^${AGENT}/memory/(self|operator)\\.md$`),
    owner: { rule: "per", of: "agent (its notes; the memory index reads the first 1 MB)" },
  },
  {
    pattern: new RegExp(`^${AGENT}/\\.holon/ledger/context_episodes\\.jsonl$`),
    owner: { rule: "retention", family: "episodes" }, // rewritten from the episodes kept
  },
  {
    pattern: new RegExp(`^${AGENT}/\\.holon/indexes/memory\\.(sqlite3|sqlite3-journal|dirty)$`),
    owner: { rule: "derived", from: "briefs, episodes, work items and memory notes kept" },
  },
  {
    pattern: new RegExp(`^${AGENT}/\\.holon/processes/[^/]+/[^/]+$`),
    owner: { rule: "retention", family: "task_output" },
  },
  {
    pattern: new RegExp(`^${AGENT}/\\.holon/patch-journal/[^/]+$`),
    owner: { rule: "fixed", why: "a patch in progress; removed when it is applied or undone" },
  },
  {
    pattern: new RegExp(`^${AGENT}/\\.holon/state/template\\.json$`),
    owner: { rule: "per", of: "agent (the template it was made from)" },
  },
];

/** The kind a file (path relative to the home, `/`-separated) belongs to, if any. */
export function fileKindOf(relative: string): FileKind | undefined {
  return FILE_KINDS.find((k) => k.pattern.test(relative));
}
