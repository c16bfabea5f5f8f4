// Prompt assembly: the provider-neutral frame built from the ordered prompt contributors
// (src/context/), plus the incoming message rendered with its provenance. The first
// `system_prompt` section is the system prompt; other system sections follow in order;
// context sections ride beside the message. The cache key covers only what is stable.
import { createHash, type Hash } from "node:crypto";
import { bodyText, type MessageEnvelope } from "../domain/message.ts";
import {
  toolSetDigest,
  type ProviderPromptFrame,
  type PromptContentBlock,
} from "../providers/model.ts";
import type {
  LoadedInstructions,
  PromptContext,
  PromptContributor,
  PromptSection,
} from "../context/section.ts";

export type BuiltFrame = {
  frame: ProviderPromptFrame;
  loaded: LoadedInstructions[];
  /** Each contributor's sections, in order, for inspection surfaces. */
  sections: { contributor: string; section: PromptSection }[];
};

export async function buildFrame(
  contributors: PromptContributor[],
  ctx: PromptContext,
): Promise<BuiltFrame> {
  const sections: BuiltFrame["sections"] = [];
  for (const c of contributors) {
    // Awaited only when it is a promise: most contributors answer synchronously.
    const contributed = c.contribute(ctx);
    const list = contributed instanceof Promise ? await contributed : contributed;
    for (const section of list) sections.push({ contributor: c.id, section });
  }
  const loaded = sections.flatMap((s) => s.section.loaded ?? []);
  const systemPrompt = sections
    .filter((s) => s.section.placement === "system_prompt")
    .map((s) => s.section.text)
    .join("\n\n");
  const block = (s: PromptSection): PromptContentBlock => ({
    text: s.text,
    stability: s.stability,
    cache_breakpoint: s.cache_breakpoint ?? false,
  });
  const system = sections.filter((s) => s.section.placement === "system").map((s) => s.section);
  const context = sections.filter((s) => s.section.placement === "context").map((s) => s.section);
  const stable = stableDigest(ctx.agent.agent_id, {
    policy: systemPrompt,
    blocks: system.filter((s) => !s.cache_exempt).map((s) => s.text),
    tools: toolSetDigest(ctx.tools),
    root: ctx.executionRoot,
  });
  const frame: ProviderPromptFrame = {
    system_prompt: systemPrompt,
    system_blocks: system.map(block),
    context_blocks: context.map(block),
    cache: {
      agent_id: ctx.agent.agent_id,
      prompt_cache_key: `holon-${ctx.agent.agent_id}-${stable.key}`,
      // SHA-256 of the stable surface's JSON followed by the context texts' JSON.
      context_fingerprint: stable.hash
        .copy()
        .update(JSON.stringify(context.map((c) => c.text)))
        .digest("hex"),
    },
  };
  return { frame, loaded, sections };
}

type StableSurface = { policy: string; blocks: string[]; tools: string; root: string };
type StableHash = { surface: StableSurface; hash: Hash; key: string };

/**
 * The stable surface (system prompt, cacheable system blocks, tool set, execution root) is
 * the same turn after turn, and is tens of KB: per agent, the last one is kept with a hash
 * that has read its JSON, so an unchanged surface is compared, not serialized and hashed
 * again. The cache key and the fingerprint are the same digests as computed afresh.
 */
const stableHashes = new Map<string, StableHash>();
const STABLE_KEPT = 64;

function stableDigest(agentId: string, surface: StableSurface): StableHash {
  const hit = stableHashes.get(agentId);
  if (hit !== undefined && sameSurface(hit.surface, surface)) return hit;
  const hash = createHash("sha256").update(JSON.stringify(surface));
  const fresh = { surface, hash, key: hash.copy().digest("hex").slice(0, 16) };
  stableHashes.delete(agentId);
  stableHashes.set(agentId, fresh);
  if (stableHashes.size > STABLE_KEPT) stableHashes.delete(stableHashes.keys().next().value!);
  return fresh;
}

function sameSurface(a: StableSurface, b: StableSurface): boolean {
  return (
    a.policy === b.policy &&
    a.tools === b.tools &&
    a.root === b.root &&
    a.blocks.length === b.blocks.length &&
    a.blocks.every((t, i) => t === b.blocks[i])
  );
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
