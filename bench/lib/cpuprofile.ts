// Reads a V8 .cpuprofile (what `node --cpu-prof` writes) and names the functions that took
// the most self time, so a benchmark can say where a host spent its CPU without a viewer.
import { readFileSync } from "node:fs";

type ProfileNode = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
};

type Profile = { nodes: ProfileNode[]; samples?: number[]; timeDeltas?: number[] };

/** "12.3%  name  file:line" for the `n` functions with the most self time. */
export function topFunctions(file: string, n: number): string[] {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // Self time per node from the sample timeline (hitCount alone ignores sample spacing).
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + (deltas[i + 1] ?? deltas[i] ?? 0));
  }
  const byFunction = new Map<string, number>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    total += us;
    const where = frame.url
      ? `${frame.url.replace(/^.*\/(src|node_modules)\//, "$1/")}:${frame.lineNumber + 1}`
      : "";
    const key = `${frame.functionName || "(anonymous)"}  ${where}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  }
  return [...byFunction.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([key, us]) => `${((us / Math.max(1, total)) * 100).toFixed(1).padStart(5)}%  ${key}`);
}
