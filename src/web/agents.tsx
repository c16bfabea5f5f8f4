// The agents page: every agent (children as a tree under their parent) with its status,
// what it waits for, when it wakes next, its current work item and today's cost. One
// request draws it (GET /ui/api/overview); the same request with the last cursor waits for
// the next change, so the page stays live.
import { useEffect, useState } from "react";
import { ApiError, get } from "./api.ts";
import { takeBootOverview } from "./boot.ts";
import { ago, cut, money } from "./format.ts";
import { ErrorLine } from "./parts.tsx";

export type OverviewAgent = {
  agent_id: string;
  status: string;
  visibility: string;
  is_default: boolean;
  pending: number;
  sleeping_until: string | null;
  waiting: {
    waiting_reason: string | null;
    sleep_wake_at: string | null;
    timers: { active: number; next_fire_at: string | null };
    external_trigger: { url?: string; status?: string } | null;
  } | null;
  closure: { outcome?: string; waiting_reason?: string } | null;
  current_work_item: { id: string; objective: string; recheck_at: string | null } | null;
  active_task_ids: string[];
  lineage_parent_agent_id: string | null;
  cost_today_usd: number | null;
  tokens_today: number;
  last_failure: { message?: string } | null;
};
export type Overview = {
  cursor: number;
  now: string;
  default_agent: string;
  asks_pending: number;
  agents: OverviewAgent[];
};

export function waitsFor(a: OverviewAgent): string {
  const parts: string[] = [];
  if (a.sleeping_until || a.waiting?.sleep_wake_at) parts.push("sleep");
  if (a.active_task_ids.length > 0) parts.push(`tasks (${a.active_task_ids.length})`);
  const reason = a.waiting?.waiting_reason ?? a.closure?.waiting_reason;
  if (reason) parts.push(reason.replaceAll("_", " "));
  if (a.status === "awaiting_operator") parts.push("operator");
  return parts.length ? [...new Set(parts)].join(", ") : "—";
}

export function nextWake(a: OverviewAgent): string | null {
  const times = [
    a.waiting?.sleep_wake_at,
    a.sleeping_until,
    a.waiting?.timers.next_fire_at,
    a.current_work_item?.recheck_at,
  ].filter((t): t is string => typeof t === "string");
  times.sort();
  return times[0] ?? null;
}

/** Parents first, each followed by its children (depth for indentation). */
function tree(agents: OverviewAgent[]): { a: OverviewAgent; depth: number }[] {
  const ids = new Set(agents.map((a) => a.agent_id));
  const kids = new Map<string, OverviewAgent[]>();
  for (const a of agents) {
    const p = a.lineage_parent_agent_id;
    if (p && ids.has(p)) kids.set(p, [...(kids.get(p) ?? []), a]);
  }
  const out: { a: OverviewAgent; depth: number }[] = [];
  const seen = new Set<string>();
  const walk = (a: OverviewAgent, depth: number) => {
    if (seen.has(a.agent_id) || depth > 20) return;
    seen.add(a.agent_id);
    out.push({ a, depth });
    for (const k of kids.get(a.agent_id) ?? []) walk(k, depth + 1);
  };
  for (const a of agents) {
    if (!a.lineage_parent_agent_id || !ids.has(a.lineage_parent_agent_id)) walk(a, 0);
  }
  return out;
}

export function AgentsPage({ onAuthLost }: { onAuthLost: () => void }) {
  // The first answer may have come already: boot.ts asked for it before React loaded.
  const [early] = useState(() => takeBootOverview<Overview>());
  const [data, setData] = useState<Overview | null>(() =>
    early && "value" in early ? early.value : null,
  );
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    (async () => {
      let cursor: number | null = early && "value" in early ? early.value.cursor : null;
      let pending = early && "promise" in early ? early.promise : null;
      while (!ac.signal.aborted) {
        try {
          const q: string = cursor === null ? "" : `?after=${cursor}&wait_ms=20000`;
          const first = pending;
          pending = null;
          const o: Overview = await (first ?? get<Overview>(`/ui/api/overview${q}`, ac.signal));
          cursor = o.cursor;
          setData(o);
          setError(null);
        } catch (err) {
          if (ac.signal.aborted) return;
          if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
            onAuthLost();
            return;
          }
          setError(err instanceof Error ? err.message : String(err));
          await new Promise((r) => setTimeout(r, 2000));
        }
      }
    })();
    return () => ac.abort();
  }, [onAuthLost, early]);

  if (!data) return <p aria-busy="true">{error ?? "Loading agents…"}</p>;
  const now = Date.parse(data.now);
  return (
    <section aria-labelledby="agents-h">
      <h1 id="agents-h">Agents</h1>
      <ErrorLine error={error} />
      <p>
        {data.agents.length} agents · <a href="#/asks">{data.asks_pending} open asks</a>
      </p>
      <table className="grid" data-testid="agents">
        <thead>
          <tr>
            <th scope="col">Agent</th>
            <th scope="col">Status</th>
            <th scope="col">Waits for</th>
            <th scope="col">Next wake</th>
            <th scope="col">Work item</th>
            <th scope="col">Cost today</th>
          </tr>
        </thead>
        <tbody>
          {tree(data.agents).map(({ a, depth }) => {
            const wake = nextWake(a);
            return (
              <tr key={a.agent_id} data-agent={a.agent_id}>
                <td style={{ paddingLeft: 8 + depth * 18 }}>
                  {depth > 0 ? <span aria-hidden="true">└ </span> : null}
                  <a href={`#/agent/${encodeURIComponent(a.agent_id)}`}>{a.agent_id}</a>
                  {a.is_default ? <span className="tag">default</span> : null}
                  {a.visibility !== "public" ? <span className="tag">{a.visibility}</span> : null}
                </td>
                <td>
                  <span className={`status s-${a.status}`} data-testid="status">
                    {a.status}
                  </span>
                  {a.pending > 0 ? <span className="tag">{a.pending} queued</span> : null}
                  {a.last_failure ? (
                    <span className="tag bad" title={cut(a.last_failure.message, 300)}>
                      failed
                    </span>
                  ) : null}
                </td>
                <td>{waitsFor(a)}</td>
                <td>{wake ? <time dateTime={wake}>{ago(wake, now)}</time> : "—"}</td>
                <td>{a.current_work_item ? cut(a.current_work_item.objective, 80) : "—"}</td>
                <td data-testid="cost">
                  {money(a.cost_today_usd)} <span className="dim">({a.tokens_today} tok)</span>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
