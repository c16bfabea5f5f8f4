// Model-facing names of MCP tools: `mcp__<server>__<tool>`, made to fit what every provider
// accepts (`^[a-zA-Z0-9_-]{1,64}$`). Other characters become `_`; a name that is too long,
// or that collides with another after that, keeps a prefix and ends in `_` plus 6 hex
// characters of the SHA-256 of the original server and tool names, so the same tool always
// gets the same name (the prompt's cached prefix does not move) and two tools never share one.
import { createHash } from "node:crypto";

export const TOOL_NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX = 64;

function clean(s: string): string {
  return s.replace(/[^a-zA-Z0-9_-]/g, "_");
}

function hashed(server: string, tool: string, base: string): string {
  const h = createHash("sha256").update(`${server}\0${tool}`).digest("hex").slice(0, 6);
  return `${base.slice(0, MAX - 7)}_${h}`;
}

/** The plain name of one tool, before collisions are looked at. */
export function plainToolName(server: string, tool: string): string {
  const base = `mcp__${clean(server)}__${clean(tool)}`;
  return base.length <= MAX ? base : hashed(server, tool, base);
}

export type NamedTool = { server: string; tool: string; name: string };

/**
 * Names for a set of (server, tool) pairs. Pairs are taken in a fixed order, so which one of
 * two colliding tools keeps the plain name does not depend on the order servers answered.
 */
export function nameTools(pairs: readonly { server: string; tool: string }[]): NamedTool[] {
  const sorted = [...pairs].sort((a, b) =>
    a.server === b.server ? cmp(a.tool, b.tool) : cmp(a.server, b.server),
  );
  const plainCount = new Map<string, number>();
  for (const p of sorted) {
    const n = plainToolName(p.server, p.tool);
    plainCount.set(n, (plainCount.get(n) ?? 0) + 1);
  }
  const used = new Set<string>();
  const out: NamedTool[] = [];
  for (const p of sorted) {
    const plain = plainToolName(p.server, p.tool);
    // A name that was changed (characters replaced) and collides gets a hash; an unchanged
    // one keeps its name, so a server adding a look-alike tool cannot rename an existing one.
    const exact = `mcp__${p.server}__${p.tool}` === plain;
    let name = plain;
    if ((plainCount.get(plain) ?? 0) > 1 && !exact) name = hashed(p.server, p.tool, plain);
    if (used.has(name)) name = hashed(p.server, p.tool, `${plain}_`);
    used.add(name);
    out.push({ ...p, name });
  }
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
