// The prompt frame's cache key and context fingerprint: the stable surface (system prompt,
// cacheable system blocks, tool set, execution root) is hashed once per change and reused
// while it stays the same, and both digests are exactly what hashing afresh gives: the key
// moves with any part of the stable surface, the fingerprint with the turn's context too.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { PromptContext, PromptContributor, PromptSection } from "../src/context/section.ts";
import { toolSetDigest, type ToolSpec } from "../src/providers/model.ts";
import { buildFrame } from "../src/turn/prompt.ts";

const sha = (t: string) => createHash("sha256").update(t).digest("hex");

type Parts = { policy: string; block: string; exempt: string; context: string; root: string };

function contributors(p: Parts): PromptContributor[] {
  const sections: PromptSection[] = [
    { placement: "system_prompt", text: p.policy, stability: "stable" },
    { placement: "system", text: p.block, stability: "agent_scoped" },
    { placement: "system", text: p.exempt, stability: "stable", cache_exempt: true },
    { placement: "context", text: p.context, stability: "turn_scoped" },
  ];
  return [{ id: "fixed", contribute: () => sections }];
}

async function build(agentId: string, p: Parts, tools: ToolSpec[]) {
  const ctx = {
    agent: { agent_id: agentId },
    executionRoot: p.root,
    tools,
  } as unknown as PromptContext;
  return (await buildFrame(contributors(p), ctx)).frame.cache!;
}

/** The digests as defined: the stable surface's JSON, then that JSON and the context's. */
function expected(agentId: string, p: Parts, tools: ToolSpec[]) {
  const surface = JSON.stringify({
    policy: p.policy,
    blocks: [p.block],
    tools: toolSetDigest(tools),
    root: p.root,
  });
  return {
    agent_id: agentId,
    prompt_cache_key: `holon-${agentId}-${sha(surface).slice(0, 16)}`,
    context_fingerprint: sha(surface + JSON.stringify([p.context])),
  };
}

describe("prompt frame digests", () => {
  const toolsA: ToolSpec[] = [{ name: "ExecCommand", description: "run", parameters: {} }];
  const toolsB: ToolSpec[] = [{ name: "ApplyPatch", description: "patch", parameters: {} }];
  const base: Parts = {
    policy: "You are an agent. ".repeat(200),
    block: "agent instructions",
    exempt: "mode guidance",
    context: "recent history 1",
    root: "/home/u/.holon/agents/a",
  };

  it("equal the digests computed afresh, turn after turn and as any part changes", async () => {
    const steps: [string, Parts, ToolSpec[]][] = [
      ["a", base, toolsA],
      ["a", base, toolsA], // unchanged: reused
      ["a", { ...base, context: "recent history 2" }, toolsA], // only the context moved
      ["a", { ...base, policy: base.policy + "!" }, toolsA],
      ["a", { ...base, block: "other instructions" }, toolsA],
      ["a", { ...base, root: "/elsewhere" }, toolsA],
      ["a", base, toolsB],
      ["b", base, toolsA], // another agent: its own key
      ["a", { ...base, exempt: "other guidance" }, toolsA], // exempt: same key as the first
    ];
    const keys: string[] = [];
    for (const [agent, parts, tools] of steps) {
      const got = await build(agent, parts, tools);
      expect(got).toEqual(expected(agent, parts, tools));
      keys.push(got.prompt_cache_key);
    }
    expect(keys[1]).toBe(keys[0]);
    expect(keys[2]).toBe(keys[0]);
    expect(new Set(keys.slice(3, 8)).size).toBe(5);
    expect(keys.slice(3, 8)).not.toContain(keys[0]);
    expect(keys[8]).toBe(keys[0]);
  });
});
