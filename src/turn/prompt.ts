// Prompt assembly: the provider-neutral frame, in the contract's order — runtime policy,
// mode guidance, agent AGENTS.md, workspace AGENTS.md (or CLAUDE.md), tool guidance — plus
// the turn-scoped context and the incoming message rendered with its provenance.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentRecord } from "../domain/agent.ts";
import { bodyText, type MessageEnvelope } from "../domain/message.ts";
import type { ProviderPromptFrame, PromptContentBlock, ToolSpec } from "../providers/model.ts";
import type { Store } from "../store/db.ts";

const promptCache = new Map<string, string>();
function promptFile(name: string): string {
  let text = promptCache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`./prompts/${name}`, import.meta.url), "utf8").trim();
    promptCache.set(name, text);
  }
  return text;
}

export type LoadedInstructions = { scope: "agent" | "workspace"; path: string; kind: string };

const MAX_INSTRUCTION_CHARS = 64_000;

function readInstructions(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, "utf8");
  return text.length > MAX_INSTRUCTION_CHARS ? text.slice(0, MAX_INSTRUCTION_CHARS) : text;
}

function modeGuidance(message: MessageEnvelope): string {
  switch (message.trigger_kind) {
    case "operator_input":
      return promptFile("mode-operator.md");
    case "external_event":
      return promptFile("mode-event.md");
    default:
      return promptFile("mode-task.md");
  }
}

export type BuiltFrame = {
  frame: ProviderPromptFrame;
  loaded: LoadedInstructions[];
};

export function buildFrame(opts: {
  store: Store;
  agent: AgentRecord;
  message: MessageEnvelope;
  executionRoot: string;
  cwd: string;
  tools: ToolSpec[];
}): BuiltFrame {
  const { agent, message } = opts;
  const loaded: LoadedInstructions[] = [];
  const stable: PromptContentBlock[] = [
    { text: promptFile("runtime-policy.md"), stability: "stable", cache_breakpoint: false },
    { text: promptFile("tool-guidance.md"), stability: "stable", cache_breakpoint: true },
  ];
  const agentScoped: PromptContentBlock[] = [];
  const agentMd = readInstructions(join(agent.agent_home, "AGENTS.md"));
  if (agentMd) {
    loaded.push({ scope: "agent", path: join(agent.agent_home, "AGENTS.md"), kind: "AGENTS.md" });
    agentScoped.push({
      text: `Agent instructions (from ${join(agent.agent_home, "AGENTS.md")}):\n\n${agentMd}`,
      stability: "agent_scoped",
      cache_breakpoint: false,
    });
  }
  if (agent.workspace_root) {
    for (const name of ["AGENTS.md", "CLAUDE.md"]) {
      const path = join(agent.workspace_root, name);
      const text = readInstructions(path);
      if (text !== undefined) {
        loaded.push({ scope: "workspace", path, kind: name });
        agentScoped.push({
          text: `Workspace instructions (from ${path}):\n\n${text}`,
          stability: "agent_scoped",
          cache_breakpoint: false,
        });
        break; // CLAUDE.md only when AGENTS.md is absent
      }
    }
  }
  if (agentScoped.length > 0) agentScoped[agentScoped.length - 1]!.cache_breakpoint = true;

  const environment = [
    `Agent: ${agent.agent_id}`,
    `Agent home: ${agent.agent_home}`,
    `Execution root: ${opts.executionRoot}`,
    `Working directory: ${opts.cwd}`,
    `Execution policy: host_local (paths are checked; the process itself is not sandboxed)`,
  ].join("\n");
  const context: PromptContentBlock[] = [
    { text: `Environment:\n${environment}`, stability: "turn_scoped", cache_breakpoint: false },
  ];
  const history = recentHistory(opts.store, agent.agent_id, message.id);
  if (history) context.push({ text: history, stability: "turn_scoped", cache_breakpoint: false });

  // The system side follows the loading contract's order: runtime policy, mode guidance,
  // agent instructions, workspace instructions, tool guidance. Mode guidance comes from a
  // small fixed set, so it is left out of the cache key.
  const mode: PromptContentBlock = {
    text: modeGuidance(message),
    stability: "turn_scoped",
    cache_breakpoint: false,
  };
  const systemBlocks = [mode, ...agentScoped, stable[1]!];
  const stableSurface = JSON.stringify({
    policy: stable[0]!.text,
    blocks: systemBlocks.filter((b) => b !== mode).map((b) => b.text),
    tools: opts.tools.map((t) => [t.name, t.description, t.parameters]),
    root: opts.executionRoot,
  });
  const frame: ProviderPromptFrame = {
    system_prompt: stable[0]!.text,
    system_blocks: systemBlocks,
    context_blocks: context,
    cache: {
      agent_id: agent.agent_id,
      prompt_cache_key: `holon-${agent.agent_id}-${digest(stableSurface).slice(0, 16)}`,
      context_fingerprint: digest(stableSurface + JSON.stringify(context.map((c) => c.text))),
    },
  };
  return { frame, loaded };
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** The incoming message as the model sees it: a provenance header, then the content. */
export function renderIncoming(message: MessageEnvelope, label = "Incoming message"): string {
  const origin = Object.entries(message.origin)
    .filter(([k]) => k !== "kind")
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(" ");
  const header = [
    `[${label}: kind=${message.kind}`,
    `origin=${message.origin.kind}${origin ? ` (${origin})` : ""}`,
    `authority=${message.authority_class}`,
    `trust=${message.trust}`,
    message.delivery_surface ? `via=${message.delivery_surface}` : undefined,
    `priority=${message.priority}]`,
  ]
    .filter(Boolean)
    .join(" ");
  return `${header}\n${bodyText(message.body)}`;
}

const HISTORY_MESSAGES = 8;
const HISTORY_CHARS = 1_500;

/** The last few exchanges (incoming message and the brief that answered it), bounded. */
function recentHistory(
  store: Store,
  agentId: string,
  currentMessageId: string,
): string | undefined {
  const messages = store.messages
    .recent(agentId, HISTORY_MESSAGES + 1)
    .filter((m) => m.id !== currentMessageId && m.status !== "queued")
    .reverse();
  if (messages.length === 0) return undefined;
  const briefs = store.briefs.recent(agentId, 50);
  const lines: string[] = ["Recent history (oldest first):"];
  for (const m of messages) {
    lines.push(`- ${m.kind} from ${m.origin.kind} at ${m.created_at}: ${clip(bodyText(m.body))}`);
    const answer = briefs.filter((b) => b.related_message_id === m.id).at(-1);
    if (answer) lines.push(`  your ${answer.kind} brief: ${clip(answer.text)}`);
  }
  return lines.join("\n");
}

function clip(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > HISTORY_CHARS ? flat.slice(0, HISTORY_CHARS) + "…" : flat;
}
