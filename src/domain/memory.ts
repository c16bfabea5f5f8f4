// Cross-turn continuity records (src/memory/continuity.ts): the agent's working memory,
// derived by the runtime at each turn boundary and revisioned, and context episodes, the
// immutable summaries of finished chunks of work. See docs/memory.md.
import { z } from "zod";

/** What the agent is doing and why, derived from work items, briefs, tool evidence, waits. */
export const WorkingMemorySnapshot = z.object({
  current_work_item: z
    .object({
      id: z.string(),
      objective: z.string(),
      plan_status: z.string(),
      todos: z.string(),
      next_todo: z.string().optional(),
      blocked_by: z.string().optional(),
    })
    .nullable(),
  open_work_items: z.number().int(),
  last_request: z.string(),
  last_result: z.string(),
  files_touched: z.array(z.string()),
  commands: z.array(z.string()),
  recent_errors: z.array(z.string()),
  waiting: z.string().nullable(),
});
export type WorkingMemorySnapshot = z.infer<typeof WorkingMemorySnapshot>;

/** The open episode: evidence merged from each turn until a semantic boundary. */
export const EpisodeBuilder = z.object({
  id: z.string(),
  started_at: z.string(),
  first_turn: z.number().int(),
  last_turn: z.number().int(),
  first_message_count: z.number().int(),
  last_message_count: z.number().int(),
  work_item_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  turns: z.number().int(),
  requests: z.array(z.string()),
  results: z.array(z.string()),
  files: z.array(z.string()),
  commands: z.array(z.string()),
  verification: z.array(z.string()),
  errors: z.array(z.string()),
});
export type EpisodeBuilder = z.infer<typeof EpisodeBuilder>;

export const EpisodeBoundary = z.enum(["work_switch", "result_checkpoint", "waiting", "cap"]);

/** A finalized episode: never changed once written. */
export const EpisodeRecord = z.object({
  id: z.string(),
  agent_id: z.string(),
  created_at: z.string(),
  started_at: z.string(),
  turn_range: z.tuple([z.number().int(), z.number().int()]),
  message_count_range: z.tuple([z.number().int(), z.number().int()]),
  work_item_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  files: z.array(z.string()),
  commands: z.array(z.string()),
  verification: z.array(z.string()),
  decisions: z.array(z.string()),
  carry_forward: z.array(z.string()),
  waiting: z.string().nullable(),
  boundary: EpisodeBoundary,
  /** One bounded text for prompt projection and search. */
  summary: z.string(),
});
export type EpisodeRecord = z.infer<typeof EpisodeRecord>;

export const WorkingMemoryRecord = z.object({
  agent_id: z.string(),
  revision: z.number().int(),
  updated_at: z.string(),
  current: WorkingMemorySnapshot,
  /** Short lines saying what changed; shown on the next model-visible turn. */
  pending_delta: z.array(z.string()),
  last_prompted_revision: z.number().int(),
  active_episode: EpisodeBuilder.nullable(),
  archived_episode_count: z.number().int(),
  /** Turn-local compactions over the agent's life, and the rounds they folded into recaps. */
  compactions_total: z.number().int().default(0),
  /** The newest turns' tool use per message (`ExecCommand 3× (1 failed)`), for the history tail. */
  turn_tools: z.array(z.object({ message_id: z.string(), tools: z.string() })).default([]),
  compacted_rounds_total: z.number().int().default(0),
});
export type WorkingMemoryRecord = z.infer<typeof WorkingMemoryRecord>;
