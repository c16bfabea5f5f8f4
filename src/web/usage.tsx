// Usage: tokens or dollars per day as a stacked bar chart (SVG, drawn here: no chart
// library), by agent, model or work item, with the numbers beside it as a table (the
// chart's accessible twin). Agent and model come from GET /usage; work items from each
// agent's priced rounds.
import { useEffect, useMemo, useState } from "react";
import { get } from "./api.ts";
import { cut, money } from "./format.ts";
import { ErrorLine } from "./parts.tsx";

type Group = {
  agent_id: string;
  model_ref: string;
  day: string;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
};
type Round = {
  ts: string;
  work_item_id: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number | null;
};
type By = "agent" | "model" | "work_item";
type Metric = "tokens" | "dollars";
type Row = { day: string; key: string; tokens: number; dollars: number };

const COLORS = [
  "#2b6cb0",
  "#c05621",
  "#2f855a",
  "#6b46c1",
  "#b83280",
  "#2c7a7b",
  "#975a16",
  "#4a5568",
];

export function UsagePage() {
  const [by, setBy] = useState<By>("agent");
  const [metric, setMetric] = useState<Metric>("tokens");
  const [days, setDays] = useState(14);
  const [rows, setRows] = useState<Row[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const ac = new AbortController();
    setRows(null);
    (async () => {
      try {
        const r = await get<{ groups: Group[] }>(`/usage?since=${days}d`, ac.signal);
        if (by !== "work_item") {
          setRows(
            r.groups.map((g) => ({
              day: g.day,
              key: by === "agent" ? g.agent_id : g.model_ref,
              tokens: g.input_tokens + g.output_tokens,
              dollars: g.cost_usd ?? 0,
            })),
          );
          return;
        }
        const agents = [...new Set(r.groups.map((g) => g.agent_id))].slice(0, 50);
        const out: Row[] = [];
        for (const a of agents) {
          const rr = await get<{ rounds: Round[] }>(
            `/control/agents/${encodeURIComponent(a)}/usage/rounds?since=${days}d&limit=1000`,
            ac.signal,
          ).catch(() => ({ rounds: [] as Round[] }));
          for (const x of rr.rounds) {
            out.push({
              day: x.ts.slice(0, 10),
              key: x.work_item_id ?? `${a} (no work item)`,
              tokens: x.input_tokens + x.output_tokens,
              dollars: x.cost_usd ?? 0,
            });
          }
        }
        setRows(out);
      } catch (err) {
        if (!ac.signal.aborted) setError(err instanceof Error ? err.message : String(err));
      }
    })();
    return () => ac.abort();
  }, [by, days]);

  const chart = useMemo(() => {
    if (!rows) return null;
    const dayList: string[] = [];
    const end = new Date();
    for (let i = days - 1; i >= 0; i--)
      dayList.push(new Date(end.getTime() - i * 86_400_000).toISOString().slice(0, 10));
    const keys = [...new Set(rows.map((r) => r.key))].sort();
    const cell = new Map<string, number>();
    for (const r of rows) {
      const k = `${r.day}|${r.key}`;
      cell.set(k, (cell.get(k) ?? 0) + (metric === "tokens" ? r.tokens : r.dollars));
    }
    const totals = dayList.map((d) => keys.reduce((s, k) => s + (cell.get(`${d}|${k}`) ?? 0), 0));
    const max = Math.max(1e-9, ...totals);
    return { dayList, keys, cell, totals, max };
  }, [rows, metric, days]);

  const fmt = (v: number) => (metric === "tokens" ? String(Math.round(v)) : money(v));
  const W = 720;
  const H = 220;
  return (
    <section aria-labelledby="usage-h">
      <h1 id="usage-h">Usage</h1>
      <div className="bar">
        <label>
          By{" "}
          <select value={by} onChange={(e) => setBy(e.target.value as By)}>
            <option value="agent">agent</option>
            <option value="model">model</option>
            <option value="work_item">work item</option>
          </select>
        </label>
        <label>
          Show{" "}
          <select value={metric} onChange={(e) => setMetric(e.target.value as Metric)}>
            <option value="tokens">tokens</option>
            <option value="dollars">dollars</option>
          </select>
        </label>
        <label>
          Days{" "}
          <select value={days} onChange={(e) => setDays(Number(e.target.value))}>
            {[7, 14, 30, 90].map((d) => (
              <option key={d} value={d}>
                {d}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorLine error={error} />
      {!chart ? (
        <p aria-busy="true">Loading…</p>
      ) : (
        <>
          <svg
            className="chart"
            data-testid="usage-chart"
            viewBox={`0 0 ${W} ${H + 30}`}
            role="img"
            aria-label={`${metric} per day by ${by.replace("_", " ")}, last ${days} days`}
          >
            {chart.dayList.map((d, i) => {
              const bw = W / chart.dayList.length;
              let y = H;
              return (
                <g key={d}>
                  {chart.keys.map((k, ki) => {
                    const v = chart.cell.get(`${d}|${k}`) ?? 0;
                    if (v <= 0) return null;
                    const h = (v / chart.max) * (H - 10);
                    y -= h;
                    return (
                      <rect
                        key={k}
                        x={i * bw + 2}
                        y={y}
                        width={bw - 4}
                        height={h}
                        fill={COLORS[ki % COLORS.length]}
                      >
                        <title>{`${d} · ${k}: ${fmt(v)}`}</title>
                      </rect>
                    );
                  })}
                  {i % Math.ceil(chart.dayList.length / 7) === 0 ? (
                    <text x={i * bw + 2} y={H + 20} className="axis">
                      {d.slice(5)}
                    </text>
                  ) : null}
                </g>
              );
            })}
          </svg>
          <ul className="legend">
            {chart.keys.map((k, ki) => (
              <li key={k}>
                <span
                  className="swatch"
                  style={{ background: COLORS[ki % COLORS.length] }}
                  aria-hidden="true"
                />{" "}
                {cut(k, 60)}
              </li>
            ))}
          </ul>
          <table className="grid" data-testid="usage-table">
            <caption>Totals over the last {days} days</caption>
            <thead>
              <tr>
                <th scope="col">{by.replace("_", " ")}</th>
                <th scope="col">{metric}</th>
              </tr>
            </thead>
            <tbody>
              {chart.keys.map((k) => (
                <tr key={k}>
                  <td>{cut(k, 80)}</td>
                  <td>
                    {fmt(chart.dayList.reduce((s, d) => s + (chart.cell.get(`${d}|${k}`) ?? 0), 0))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
