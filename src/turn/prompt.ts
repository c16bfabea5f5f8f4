// Prompt assembly: the provider-neutral frame built from the ordered prompt contributors
// (src/context/), plus the incoming message rendered with its provenance. The first
// `system_prompt` section is the system prompt; other system sections follow in order;
// context sections ride beside the message. The cache key covers only what is stable.
import { createHash } from "node:crypto";
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

export function buildFrame(contributors: PromptContributor[], ctx: PromptContext): BuiltFrame {
  const sections = contributors.flatMap((c) =>
    c.contribute(ctx).map((section) => ({ contributor: c.id, section })),
  );
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
  const stableSurface = JSON.stringify({
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
      prompt_cache_key: `holon-${ctx.agent.agent_id}-${digest(stableSurface).slice(0, 16)}`,
      context_fingerprint: digest(stableSurface + JSON.stringify(context.map((c) => c.text))),
    },
  };
  return { frame, loaded, sections };
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
