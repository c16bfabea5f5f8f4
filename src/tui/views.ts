// What the console's plane overlays show, as lines of text built from the HTTP answers: the
// selected agent's children (AgentGet envelope + its tasks), its memory (the `memory` object
// of `/state`, when the host has the memory plane) and the prompt preview. Pure functions and
// one component, so they can be rendered without a host. Every reader tolerates missing or
// reshaped fields: the console may talk to an older or newer host.
import { createElement as h, type ReactElement } from "react";
import { Box, Text } from "ink";

const str = (v: unknown, dflt = "?"): string =>
  typeof v === "string" && v ? v : typeof v === "number" ? String(v) : dflt;
const obj = (v: unknown): Record<string, any> | undefined =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, any>) : undefined;
const arr = (v: unknown): any[] => (Array.isArray(v) ? v : []);
const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The `/children` overlay: the agent's identity and lineage (from
 * `GET /control/agents/:id/agent`), then each private child with its status and the state of
 * its supervising `child_agent_task` (from `GET /agents/:id/tasks`, when readable).
 */
export function childrenLines(agentGet: unknown, tasks: unknown[] | undefined): string[] {
  const a = obj(obj(agentGet)?.agent) ?? obj(agentGet);
  if (!a) return ["(no agent record)"];
  const id = obj(a.identity) ?? {};
  const out = [
    `agent ${str(id.agent_id)}  [${[id.kind, id.visibility, id.ownership, id.profile_preset].map((x) => str(x)).join(", ")}]  ${str(a.status)}`,
    `lineage: parent ${str(id.lineage_parent_agent_id, "-")} · supervisor ${str(id.supervisor_agent_id, "-")}`,
  ];
  const children = obj(a.children);
  const entries = arr(children?.entries);
  if (!children || entries.length === 0) {
    out.push("(no children)");
    return out;
  }
  out.push(`children: ${str(children.live, "0")} live of ${str(children.total, "0")}`);
  const supervision = new Map<string, Record<string, any>>();
  for (const t of tasks ?? []) {
    const cs = obj(obj(t)?.child_supervision);
    if (cs?.child_agent_id) supervision.set(String(cs.child_agent_id), { ...cs, task: t });
  }
  for (const ch of entries) {
    const c = obj(ch) ?? {};
    const cs = supervision.get(String(c.agent_id));
    const flags = [c.archived ? "archived" : null, c.visibility === "public" ? "public" : null]
      .filter(Boolean)
      .join(", ");
    out.push(
      `${c.archived ? " " : "•"} ${str(c.agent_id)}  ${str(c.status)}  ${str(c.profile_preset, "")}${flags ? `  (${flags})` : ""}`,
    );
    const state = str(cs?.state ?? c.supervision_state, "");
    const taskId = str(cs?.supervision_task_id ?? c.supervision_task_id, "");
    if (taskId || state) {
      const status = obj(cs?.task)?.status;
      const shown = [status && status !== state ? status : null, state || null].filter(Boolean);
      out.push(`    task ${taskId || "?"}  ${shown.join(", ") || "?"}`);
      if (state === "needs_input")
        out.push("    needs input: answer with holon task input <task_id> <text>");
    }
    if (cs) {
      const details = [
        cs.label ? `"${clip(String(cs.label), 40)}"` : null,
        cs.workspace_mode ? `workspace ${cs.workspace_mode}` : null,
        cs.context_mode ? `context ${cs.context_mode}` : null,
        obj(cs.worktree)?.branch ? `worktree ${cs.worktree.branch}` : null,
      ].filter(Boolean);
      if (details.length) out.push(`    ${details.join(" · ")}`);
      if (cs.closure_outcome || cs.waiting_reason)
        out.push(
          `    closure ${str(cs.closure_outcome, "-")}${cs.waiting_reason ? ` (${cs.waiting_reason})` : ""}`,
        );
    }
  }
  if (Number(children.total) > entries.length)
    out.push(`(${Number(children.total) - entries.length} more not shown)`);
  return out;
}

/** The `/memory` overlay from a `/state`-shaped object. */
export function memoryLines(state: unknown, prompt?: unknown): string[] {
  const m = obj(obj(state)?.memory);
  if (!m) return ["memory plane not available on this host"];
  const rev = m.working_memory_revision;
  const prompted = m.last_prompted_working_memory_revision;
  const out = [
    `working memory: revision ${str(rev, "0")}` +
      (prompted !== undefined ? ` (last prompted ${str(prompted, "0")})` : "") +
      (m.working_memory_updated_at ? `, updated ${m.working_memory_updated_at}` : ""),
  ];
  const delta = arr(m.pending_working_memory_delta);
  if (delta.length) {
    out.push(`pending delta (${delta.length}, not yet in a prompt):`);
    for (const d of delta.slice(0, 8))
      out.push(`  + ${clip(typeof d === "string" ? d : JSON.stringify(d), 100)}`);
    if (delta.length > 8) out.push(`  … ${delta.length - 8} more`);
  } else out.push("pending delta: none");
  out.push(
    `episodes: active ${str(m.active_episode_id, "none")} · archived ${str(m.archived_episode_count, "0")}`,
  );
  out.push(
    `compaction: ${str(m.compactions_total, "0")} compactions, ${str(m.compacted_rounds_total, "0")} rounds compacted`,
  );
  // Anything else the host reports under `memory`, so a newer host's fields still show.
  const known = new Set([
    "working_memory_revision",
    "last_prompted_working_memory_revision",
    "pending_working_memory_delta",
    "working_memory_updated_at",
    "active_episode_id",
    "archived_episode_count",
    "compactions_total",
    "compacted_rounds_total",
  ]);
  for (const [k, v] of Object.entries(m)) {
    if (known.has(k) || v === null || v === undefined) continue;
    out.push(`${k}: ${clip(typeof v === "object" ? JSON.stringify(v) : String(v), 100)}`);
  }
  const totals = obj(obj(prompt)?.totals);
  if (totals) {
    out.push(
      `next prompt: ~${str(totals.estimated_tokens)} of ${str(totals.budget_tokens)} tokens` +
        ` · compaction at ${str(totals.compaction_soft_limit_tokens)}` +
        ` · cache-stable prefix ${str(totals.cache_stable_prefix_tokens)}`,
    );
  }
  return out;
}

/**
 * The `/prompt` overlay from `GET /control/agents/:id/debug/prompt`: each section's first
 * lines, the incoming message, the tool names. Reads both the flat shape (`incoming` a
 * string, `tools` a list) and the memory plane's (`incoming.text`, `tools.names`, `totals`).
 */
export function promptLines(preview: unknown): string[] {
  const r = obj(preview) ?? {};
  const out: string[] = [];
  for (const s of arr(r.sections)) {
    const sec = obj(s) ?? {};
    const body = String(sec.text ?? "").split("\n");
    const size = sec.estimated_tokens !== undefined ? `, ~${sec.estimated_tokens} tokens` : "";
    out.push(`── ${str(sec.contributor)} (${str(sec.placement)}, ${body.length} lines${size})`);
    out.push(...body.slice(0, 2).map((l) => `   ${l.slice(0, 90)}`));
  }
  const incoming =
    typeof r.incoming === "string" ? r.incoming : String(obj(r.incoming)?.text ?? "");
  out.push(`── incoming: ${incoming.split("\n").at(-1)?.slice(0, 80) ?? ""}`);
  const tools: string[] = Array.isArray(r.tools) ? r.tools : arr(obj(r.tools)?.names);
  out.push(`tools (${tools.length}): ${tools.join(", ")}`);
  const totals = obj(r.totals);
  if (totals)
    out.push(`total ~${str(totals.estimated_tokens)} tokens of ${str(totals.budget_tokens)}`);
  out.push("(the whole text: holon debug prompt)");
  return out;
}

/** An overlay as the console draws it: a titled, rounded box of lines (at most 40). */
export function OverlayBox(props: { title: string; lines: string[] }): ReactElement {
  return h(
    Box,
    { flexDirection: "column", borderStyle: "round", paddingX: 1 },
    h(Text, { bold: true }, `${props.title} (Esc closes)`),
    ...props.lines.slice(0, 40).map((l, i) => h(Text, { key: `o${i}` }, l)),
  );
}

/** The memory overlay for a `/state`-shaped object (and, optionally, the prompt preview). */
export function MemoryOverlay(props: { state: unknown; prompt?: unknown }): ReactElement {
  return h(OverlayBox, { title: "memory", lines: memoryLines(props.state, props.prompt) });
}
