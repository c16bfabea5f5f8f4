// The asks inbox: every pending ask across agents (budget stops, approvals, questions),
// answered with one of its options (or text, where it takes text) and a reason.
import { useState } from "react";
import { post } from "./api.ts";
import { ago, cut } from "./format.ts";
import { ErrorLine } from "./parts.tsx";
import { usePoll } from "./poll.ts";

type Ask = {
  id: string;
  agent_id: string;
  kind: string;
  about: string;
  detail: string;
  options: string[];
  free_text: boolean;
  state: string;
  expires_at: string;
  created_at: string;
};

export function AsksPage() {
  const { data, error, reload } = usePoll<{ asks: Ask[] }>(
    "/control/asks?state=pending&limit=200",
    2000,
  );
  const asks = data?.asks ?? null;
  return (
    <section aria-labelledby="asks-h">
      <h1 id="asks-h">Asks</h1>
      <ErrorLine error={error} />
      {asks === null ? <p aria-busy="true">Loading…</p> : null}
      {asks && asks.length === 0 ? <p>No open asks.</p> : null}
      <ul className="cards" data-testid="asks">
        {(asks ?? []).map((a) => (
          <AskCard key={a.id} ask={a} onDone={reload} />
        ))}
      </ul>
    </section>
  );
}

function AskCard({ ask, onDone }: { ask: Ask; onDone: () => void }) {
  const [decision, setDecision] = useState(ask.options[0] ?? "");
  const [reason, setReason] = useState("");
  const [note, setNote] = useState<string | null>(null);
  const idBase = `ask-${ask.id}`;
  return (
    <li className="card" data-ask={ask.id}>
      <h2>{cut(ask.about, 200)}</h2>
      <p className="dim">
        {ask.kind} · <a href={`#/agent/${encodeURIComponent(ask.agent_id)}`}>{ask.agent_id}</a> ·
        expires {ago(ask.expires_at)}
      </p>
      <pre tabIndex={0} className="body">
        {cut(ask.detail, 20_000)}
      </pre>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await post(`/control/asks/${encodeURIComponent(ask.id)}/decision`, {
              decision,
              ...(reason.trim() ? { reason } : {}),
            });
            setNote("answered");
            onDone();
          } catch (err) {
            setNote(err instanceof Error ? err.message : String(err));
          }
        }}
      >
        {ask.options.length > 0 && !ask.free_text ? (
          <fieldset>
            <legend>Decision</legend>
            {ask.options.map((o) => (
              <label key={o} className="opt">
                <input
                  type="radio"
                  name={`${idBase}-d`}
                  value={o}
                  checked={decision === o}
                  onChange={() => setDecision(o)}
                />{" "}
                {o}
              </label>
            ))}
            {ask.options.some((o) => /\bN\b/.test(o)) ? (
              <label className="opt">
                Exact answer{" "}
                <input
                  type="text"
                  value={decision}
                  maxLength={500}
                  onChange={(e) => setDecision(e.target.value)}
                />
              </label>
            ) : null}
          </fieldset>
        ) : (
          <label>
            Answer{" "}
            <input
              type="text"
              value={decision}
              maxLength={4000}
              list={ask.options.length ? `${idBase}-opts` : undefined}
              onChange={(e) => setDecision(e.target.value)}
            />
            {ask.options.length ? (
              <datalist id={`${idBase}-opts`}>
                {ask.options.map((o) => (
                  <option key={o} value={o} />
                ))}
              </datalist>
            ) : null}
          </label>
        )}
        <label>
          Reason{" "}
          <input
            type="text"
            value={reason}
            maxLength={2000}
            onChange={(e) => setReason(e.target.value)}
          />
        </label>
        <button type="submit">Answer</button>
        <span role="status" className="dim">
          {note}
        </span>
      </form>
    </li>
  );
}
