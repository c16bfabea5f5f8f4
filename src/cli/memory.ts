// `holon debug prompt [agent]`: the agent's next provider request, section by section, with
// sizes and token estimates; the cache-stable prefix is marked. `--text <prompt>` previews the
// turn for that operator prompt instead of the next queued message; `--full` prints each
// section's text, the incoming message and the tool names too; `--json` the whole preview.
import { call, connect, type ClientFlags, agentOrDefault } from "./connect.ts";
import { printJson } from "./output.ts";

type Preview = {
  agent_id: string;
  incoming: { source: string; text: string; estimated_tokens: number };
  sections: {
    contributor: string;
    placement: string;
    stability: string;
    cache_stable: boolean;
    chars: number;
    estimated_tokens: number;
    text: string;
  }[];
  tools: { count: number; names: string[]; estimated_tokens: number };
  prompt_cache_key: string | null;
  working_memory_revision: number;
  totals: {
    estimated_tokens: number;
    cache_stable_prefix_tokens: number;
    budget_tokens: number;
    window_tokens: number;
    output_reserve_tokens: number;
    model_ref: string | null;
  };
};

export async function debugPrompt(
  agent: string | undefined,
  flags: ClientFlags & { json?: boolean; text?: string; full?: boolean },
): Promise<void> {
  const client = connect(flags);
  const agentId = await agentOrDefault(client, agent);
  const q = flags.text === undefined ? "" : `?${new URLSearchParams({ text: flags.text })}`;
  const p = await call(() =>
    client.call<Preview>("GET", `/control/agents/${encodeURIComponent(agentId)}/debug/prompt${q}`),
  );
  if (flags.json) return printJson(p);
  const t = p.totals;
  const out: string[] = [
    `agent ${p.agent_id}; model ${t.model_ref ?? "(none configured)"}; window ${t.window_tokens}, output reserve ${t.output_reserve_tokens}, prompt budget ${t.budget_tokens} tokens`,
    `prompt cache key ${p.prompt_cache_key ?? "-"}; working memory revision ${p.working_memory_revision}`,
    "",
    "  #  cache  placement      stability     chars   ~tokens  section",
  ];
  const row = (
    i: string,
    cache: boolean,
    placement: string,
    stability: string,
    chars: number,
    tokens: number,
    name: string,
  ) =>
    `${i.padStart(3)}  ${(cache ? "[c]" : "").padEnd(5)}  ${placement.padEnd(13)}  ${stability.padEnd(12)}  ${String(chars).padStart(6)}  ${String(tokens).padStart(8)}  ${name}`;
  p.sections.forEach((s, i) =>
    out.push(
      row(
        String(i + 1),
        s.cache_stable,
        s.placement,
        s.stability,
        s.chars,
        s.estimated_tokens,
        s.contributor,
      ),
    ),
  );
  out.push(
    row(
      "",
      true,
      "tools",
      "stable",
      0,
      p.tools.estimated_tokens,
      `${p.tools.count} tool definitions`,
    ),
  );
  out.push(
    row(
      "",
      false,
      "message",
      "turn_scoped",
      p.incoming.text.length,
      p.incoming.estimated_tokens,
      `incoming (${p.incoming.source})`,
    ),
  );
  out.push(
    "",
    `total ~${t.estimated_tokens} tokens of ${t.budget_tokens} (${Math.round((100 * t.estimated_tokens) / t.budget_tokens)}%); cache-stable prefix [c] ~${t.cache_stable_prefix_tokens} tokens`,
  );
  if (flags.full) {
    p.sections.forEach((s, i) => {
      out.push(
        "",
        `── ${i + 1}. ${s.contributor} (${s.placement}, ${s.stability}${s.cache_stable ? ", cache-stable" : ""}) ──`,
        s.text,
      );
    });
    out.push("", "── incoming message ──", p.incoming.text);
    out.push("", `tools (${p.tools.count}): ${p.tools.names.join(", ")}`);
  }
  process.stdout.write(out.join("\n") + "\n");
}
