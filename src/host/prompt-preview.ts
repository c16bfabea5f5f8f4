// `holon debug prompt <agent>` / `GET /control/agents/:id/debug/prompt`: what the agent's next
// provider request would contain, section by section, with sizes and token estimates, built
// by the same contributors a turn uses. The incoming message is the operator prompt the
// caller gave (never admitted or stored), else the next queued one, else a placeholder. Sections in the cache-stable prefix are marked: they
// feed the prompt cache key and stay byte-identical across ordinary turns.
import type { AgentRecord } from "../domain/agent.ts";
import type { QueuedMessage } from "../domain/message.ts";
import { estimateTools, tokenCounterFor } from "../memory/tokens.ts";
import { buildFrame, renderIncoming } from "../turn/prompt.ts";
import { toolSpecs } from "../turn/turn.ts";
import { executionBinding } from "../workspace/roots.ts";
import type { RuntimeHost } from "./host.ts";

export async function promptPreview(host: RuntimeHost, agent: AgentRecord, text?: string) {
  const services = host.services;
  const limits = services.contextLimitsOf(agent);
  // Exact counts for models with a known tokenizer, the calibrated estimate otherwise.
  const estimateTokens = tokenCounterFor(limits.model_ref);
  const queued =
    text === undefined
      ? (await host.store.messages.withStatus(agent.agent_id, "queued"))[0]
      : undefined;
  const message: QueuedMessage = queued ?? placeholder(host, agent, text);
  const { execution_root, cwd } = executionBinding(agent);
  const tools = toolSpecs(services.registry);
  const built = await buildFrame(services.contributors, {
    store: host.store,
    agent,
    message,
    executionRoot: execution_root,
    cwd,
    tools,
    executionPolicy: services.workspaces.snapshot(agent).policy,
  });
  const sections = built.sections.map(({ contributor, section }) => ({
    contributor,
    placement: section.placement,
    stability: section.stability,
    cache_stable: section.placement !== "context" && !section.cache_exempt,
    cache_breakpoint: section.cache_breakpoint ?? false,
    chars: section.text.length,
    estimated_tokens: estimateTokens(section.text),
    text: redact(section.text),
  }));
  const incoming = renderIncoming(message);
  const toolTokens = estimateTools(tools, estimateTokens);
  const stable =
    sections.filter((s) => s.cache_stable).reduce((n, s) => n + s.estimated_tokens, 0) + toolTokens;
  const total =
    sections.reduce((n, s) => n + s.estimated_tokens, 0) + toolTokens + estimateTokens(incoming);
  const wm = await host.store.memory.workingMemory(agent.agent_id);
  return {
    ok: true as const,
    agent_id: agent.agent_id,
    incoming: {
      source: queued
        ? ("queued_message" as const)
        : text === undefined
          ? ("placeholder" as const)
          : ("operator_text" as const),
      message_id: queued?.id ?? null,
      text: incoming,
      estimated_tokens: estimateTokens(incoming),
    },
    sections,
    tools: { count: tools.length, names: tools.map((t) => t.name), estimated_tokens: toolTokens },
    prompt_cache_key: built.frame.cache?.prompt_cache_key ?? null,
    context_fingerprint: built.frame.cache?.context_fingerprint ?? null,
    working_memory_revision: wm?.revision ?? 0,
    totals: {
      estimated_tokens: total,
      cache_stable_prefix_tokens: stable,
      budget_tokens: limits.prompt,
      window_tokens: limits.window,
      output_reserve_tokens: limits.output_reserve,
      compaction_soft_limit_tokens: limits.soft,
      model_ref: limits.model_ref,
      counter: estimateTokens === tokenCounterFor(null) ? "estimate" : "o200k_base",
    },
  };
}

function placeholder(host: RuntimeHost, agent: AgentRecord, text?: string): QueuedMessage {
  return {
    id: "msg_preview",
    agent_id: agent.agent_id,
    created_at: host.store.clock.now().toISOString(),
    kind: "operator_prompt",
    origin: { kind: "operator" },
    trust: "trusted_operator",
    authority_class: "operator_instruction",
    priority: "normal",
    trigger_kind: "operator_input",
    body: { type: "text", text: text ?? "(the next message goes here)" },
    seq: 0,
    status: "queued",
  };
}

/** The external trigger URL is a capability: shown as a placeholder, never in full. */
function redact(text: string): string {
  return text.replace(/(\/callbacks\/wake\/)[A-Za-z0-9_-]+/g, "$1[redacted]");
}
