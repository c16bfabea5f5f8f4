// Prompt contributors: the prompt frame is assembled from an ordered list of them, each
// owning one kind of section (runtime policy, AGENTS.md, tool guidance, environment, recent
// history; later the work queue, working memory and skills). A contributor reads what it
// needs from the per-turn context and returns sections, or nothing.
import { readFileSync } from "node:fs";
import type { AgentRecord } from "../domain/agent.ts";
import type { MessageEnvelope } from "../domain/message.ts";
import type { ExecutionPolicySnapshot } from "../domain/workspace.ts";
import type { ToolSpec } from "../providers/model.ts";
import type { Store } from "../store/db.ts";

export type PromptContext = {
  store: Store;
  agent: AgentRecord;
  message: MessageEnvelope;
  executionRoot: string;
  cwd: string;
  /** The execution policy of this turn (backend, what the sandbox enforces); absent: host_local. */
  executionPolicy?: ExecutionPolicySnapshot;
  tools: ToolSpec[];
};

/** An instruction file a contributor loaded, reported on `turn_context_built`. */
export type LoadedInstructions = { scope: "agent" | "workspace"; path: string; kind: string };

export type PromptSection = {
  /** The instructions side of the frame, or the turn-scoped context beside the message. */
  placement: "system_prompt" | "system" | "context";
  text: string;
  stability: "stable" | "agent_scoped" | "turn_scoped";
  /** Left out of the prompt cache key (mode guidance: a small fixed set). */
  cache_exempt?: boolean;
  /** Ask for a cache breakpoint after this block (the last one of its stability wins). */
  cache_breakpoint?: boolean;
  loaded?: LoadedInstructions[];
};

export type PromptContributor = {
  /** Shown by `debug prompt` style surfaces and in tests. */
  id: string;
  contribute(ctx: PromptContext): PromptSection[] | Promise<PromptSection[]>;
};

const promptCache = new Map<string, string>();

/** A prompt text from src/context/prompts/, read once. */
export function promptFile(name: string): string {
  let text = promptCache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`./prompts/${name}`, import.meta.url), "utf8").trim();
    promptCache.set(name, text);
  }
  return text;
}
