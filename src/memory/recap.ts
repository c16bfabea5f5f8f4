// The turn-local recap: a deterministic, runtime-authored summary of the older completed
// rounds of one turn, built from structured evidence (tool names, key arguments, the
// canonical result's summary, error kind/message/recovery hint, handles, edited files),
// never from a model call. Command-family output bodies never reach the recap: only their
// summary and handles do. The recap is bounded: the newest compacted rounds get one line
// each, older ones merge into range lines, and the whole text stays under a token cap.
import type { ConversationItem } from "../providers/model.ts";
import { estimateTokens } from "./tokens.ts";

/** What the runtime knows about one finished tool call (from its canonical result). */
export type ToolEvidence = {
  tool_name: string;
  status: string;
  summary: string;
  error_kind?: string | undefined;
  error_message?: string | undefined;
  recovery_hint?: string | undefined;
  handles: string[];
};

export type RoundDigest = {
  round: number;
  said: string;
  interjections: string[];
  calls: {
    name: string;
    key: string;
    files: string[];
    evidence: ToolEvidence;
  }[];
};

export const RECAP_HEADER =
  "[Runtime-generated turn-local recap, not a new message]\n" +
  "Earlier rounds of this same turn were compacted to keep the request within the context " +
  "budget. The transcript keeps them in full; the newest rounds follow exactly.";

const COMMAND_TOOLS = new Set(["ExecCommand", "ExecCommandBatch", "TaskOutput"]);

/** One provider round of the conversation: the response blocks and what followed them. */
export type Round = { items: ConversationItem[] };

export function digestRound(
  round: number,
  items: readonly ConversationItem[],
  evidence: (callId: string) => ToolEvidence | undefined,
): RoundDigest {
  const said: string[] = [];
  const interjections: string[] = [];
  const results = new Map<string, ConversationItem & { type: "tool_result" }>();
  for (const it of items) if (it.type === "tool_result") results.set(it.call_id, it);
  const calls: RoundDigest["calls"] = [];
  for (const it of items) {
    if (it.type === "assistant_text" && it.text.trim()) said.push(it.text);
    else if (it.type === "user_text") interjections.push(it.text);
    else if (it.type === "tool_call") {
      const args = parseArgs(it.arguments);
      const res = results.get(it.call_id);
      const ev = evidence(it.call_id) ?? {
        tool_name: it.name,
        status: res?.is_error ? "error" : "success",
        summary: firstLine(res?.output ?? ""),
        handles: [],
      };
      calls.push({
        name: it.name,
        key: keyArgument(it.name, args),
        files: filesOf(args),
        evidence: ev,
      });
    }
  }
  return { round, said: said.join(" "), interjections, calls };
}

function parseArgs(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function keyArgument(name: string, args: Record<string, unknown>): string {
  for (const k of ["cmd", "command", "task_id", "work_item_id", "path", "workspace", "objective"]) {
    const v = args[k];
    if (typeof v === "string" && v) return clip(v, 80);
  }
  if (name === "ExecCommandBatch" && Array.isArray(args.commands)) {
    return `${args.commands.length} commands`;
  }
  return "";
}

/** Files a patch or write touched. */
function filesOf(args: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const v of Object.values(args)) {
    if (typeof v !== "string") continue;
    for (const m of v.matchAll(/^\+\+\+ b\/(.+)$/gm)) out.push(m[1]!.trim());
  }
  return out;
}

function firstLine(text: string): string {
  return clip(text.split("\n").find((l) => l.trim()) ?? "", 160);
}

export function clip(text: string, n: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > n ? flat.slice(0, n - 1) + "…" : flat;
}

function callLine(c: RoundDigest["calls"][number]): string {
  const e = c.evidence;
  let s = `${c.name}${c.key ? ` \`${c.key}\`` : ""} → ${e.status}`;
  if (e.status === "error") {
    s += `: ${e.error_kind ?? "error"}: ${clip(e.error_message ?? e.summary, 160)}`;
    if (e.recovery_hint) s += ` (hint: ${clip(e.recovery_hint, 120)})`;
  } else if (e.summary) {
    // Command-family rule: the outcome summary only, never the old output preview.
    s += `: ${clip(e.summary, COMMAND_TOOLS.has(c.name) ? 120 : 160)}`;
  }
  if (e.handles.length) s += ` [${e.handles.slice(0, 4).join(", ")}]`;
  if (c.files.length) s += ` files: ${c.files.slice(0, 4).join(", ")}`;
  return s;
}

export function roundLine(d: RoundDigest): string {
  const parts: string[] = [];
  if (d.said) parts.push(`said: ${clip(d.said, 160)}`);
  for (const i of d.interjections) parts.push(`operator message: ${clip(i, 120)}`);
  for (const c of d.calls) parts.push(callLine(c));
  return clip(`- Round ${d.round}: ${parts.join("; ") || "(no visible output)"}`, 600);
}

/** Several rounds in one line: tool counts, frequent commands, edited files, handles, errors. */
export function rangeLine(ds: readonly RoundDigest[]): string {
  const first = ds[0]!.round;
  const last = ds.at(-1)!.round;
  const tools = new Map<string, number>();
  const commands = new Map<string, number>();
  const files = new Set<string>();
  const handles = new Set<string>();
  const errors = new Map<string, number>();
  for (const d of ds) {
    for (const c of d.calls) {
      tools.set(c.name, (tools.get(c.name) ?? 0) + 1);
      if (COMMAND_TOOLS.has(c.name) && c.key) {
        const k = clip(c.key, 40);
        commands.set(k, (commands.get(k) ?? 0) + 1);
      }
      for (const f of c.files) files.add(f);
      for (const h of c.evidence.handles) handles.add(h);
      if (c.evidence.status === "error") {
        const k = c.evidence.error_kind ?? "error";
        errors.set(k, (errors.get(k) ?? 0) + 1);
      }
    }
  }
  const top = (m: Map<string, number>, n: number, quote = false) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, n)
      .map(([k, v]) => `${quote ? `\`${k}\`` : k} ${v}×`);
  const parts = [tools.size ? top(tools, 5).join(", ") : "no tool calls"];
  if (commands.size) parts.push(`ran ${top(commands, 3, true).join(", ")}`);
  const list = (s: Set<string>, n: number) =>
    [...s].slice(0, n).join(", ") + (s.size > n ? ` (+${s.size - n} more)` : "");
  if (files.size) parts.push(`edited ${list(files, 6)}`);
  if (handles.size) parts.push(`handles ${list(handles, 6)}`);
  if (errors.size) parts.push(`errors: ${top(errors, 3).join(", ")}`);
  return clip(`- Rounds ${first}–${last}: ${parts.join("; ")}`, 500);
}

/** The recap text for these digests, kept under `capTokens`. */
export function buildRecap(digests: readonly RoundDigest[], capTokens: number): string {
  if (digests.length === 0) return "";
  const fits = (t: string) => estimateTokens(t) <= capTokens;
  // Most detail first; fewer single-round lines and coarser ranges until it fits.
  for (let detailed = Math.min(digests.length, 24); ; detailed = Math.floor(detailed / 2)) {
    const older = digests.slice(0, digests.length - detailed);
    const newer = digests.slice(digests.length - detailed);
    for (const ranges of [8, 4, 2, 1]) {
      const lines: string[] = [RECAP_HEADER];
      const size = Math.max(1, Math.ceil(older.length / ranges));
      for (let i = 0; i < older.length; i += size) lines.push(rangeLine(older.slice(i, i + size)));
      lines.push(...newer.map(roundLine));
      const text = lines.join("\n");
      if (fits(text)) return text;
    }
    if (detailed === 0) break;
  }
  // Even one range line is too long for the cap: a bare count, which always fits.
  return `${RECAP_HEADER}\n- Rounds ${digests[0]!.round}–${digests.at(-1)!.round}: ${digests.length} rounds compacted.`;
}
