// One agent: its conversation at the TUI's display levels (info, verbose, debug) from the
// presentation layer, live over the resumable event stream; a composer for the operator's
// prompt, interjection, pause, resume, stop and abort; and tabs for its work items, tasks
// (live output, stop), timers and external trigger (masked until revealed), and children.
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type { EventEnvelope } from "../domain/events.ts";
import {
  IDLE,
  nextActivity,
  presentEvent,
  renderActivity,
  shows,
  type ActivityState,
  type DisplayLevel,
  type PresentationItem,
} from "../client/presentation.ts";
import { ApiError, follow, get, post } from "./api.ts";
import { cut } from "./format.ts";
import { VirtualList } from "./list.tsx";
import { ErrorLine } from "./parts.tsx";
import { usePoll } from "./poll.ts";

const LEVELS: DisplayLevel[] = ["info", "verbose", "debug"];
/** The newest events the first screen loads; older ones come a page at a time. */
const PAGE = 500;
/** At most this many events are held in the page (the oldest are dropped past it). */
const HOLD = 50_000;
const ROW = 26;

type EventsPage = { events: EventEnvelope[]; newest_seq: number; oldest_available_seq: number };

/** Each event is presented once (the list recomputes on every batch, events stay put). */
const presented = new WeakMap<EventEnvelope, PresentationItem | null>();
function present(e: EventEnvelope): PresentationItem | null {
  const hit = presented.get(e);
  if (hit !== undefined) return hit;
  let it: PresentationItem | null;
  try {
    it = presentEvent(e);
  } catch {
    it = null; // an event this build does not know is skipped, not fatal
  }
  presented.set(e, it);
  return it;
}
const seqOf = (it: PresentationItem) => it.seq;

/** A row shows at most this much of an item's text (a wide screen shows fewer). */
const ROW_CHARS = 200;
/** A row's three cut strings, made once per item rather than on every render. */
type RowText = { ts: string; title: string; summary: string };
const rowTexts = new WeakMap<PresentationItem, RowText>();
function rowText(it: PresentationItem): RowText {
  let t = rowTexts.get(it);
  if (!t) {
    t = {
      ts: it.ts.slice(11, 19),
      title: cut(it.title, 80),
      summary: cut(it.summary || it.body, ROW_CHARS),
    };
    rowTexts.set(it, t);
  }
  return t;
}

/** The live activity line: it ticks every second on its own, without the list. */
function ActivityLine({ activity }: { activity: ActivityState }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  return (
    <p className="activity" aria-live="polite" data-testid="activity">
      {renderActivity(activity, now, 200) ?? "idle"}
    </p>
  );
}

export function AgentPage(props: { id: string; tab: string; onAuthLost: () => void }) {
  const { id, tab } = props;
  const enc = encodeURIComponent(id);
  const tabs = ["conversation", "work", "tasks", "timers", "children"];
  return (
    <section aria-labelledby="agent-h">
      <h1 id="agent-h">
        <a href="#/">Agents</a> / {id}
      </h1>
      <nav className="tabs" aria-label="Agent views">
        {tabs.map((t) => (
          <a key={t} href={`#/agent/${enc}/${t}`} aria-current={tab === t ? "page" : undefined}>
            {t[0]!.toUpperCase() + t.slice(1)}
          </a>
        ))}
      </nav>
      {tab === "work" ? (
        <WorkTab id={id} />
      ) : tab === "tasks" ? (
        <TasksTab id={id} />
      ) : tab === "timers" ? (
        <TimersTab id={id} />
      ) : tab === "children" ? (
        <ChildrenTab id={id} />
      ) : (
        <Conversation id={id} onAuthLost={props.onAuthLost} />
      )}
    </section>
  );
}

function Conversation({ id, onAuthLost }: { id: string; onAuthLost: () => void }) {
  const enc = encodeURIComponent(id);
  const [events, setEvents] = useState<EventEnvelope[]>([]);
  const [oldest, setOldest] = useState<{ seq: number; available: number } | null>(null);
  const [level, setLevel] = useState<DisplayLevel>("verbose");
  const [live, setLive] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [selected, setSelected] = useState<PresentationItem | null>(null);
  const [activity, setActivity] = useState<ActivityState>(IDLE);
  const [height, setHeight] = useState(480);

  useEffect(() => {
    const fit = () => setHeight(Math.max(240, innerHeight - 330));
    fit();
    addEventListener("resize", fit);
    return () => removeEventListener("resize", fit);
  }, []);

  useEffect(() => {
    const ac = new AbortController();
    (async () => {
      try {
        const page = await get<EventsPage>(
          `/control/agents/${enc}/events?limit=${PAGE}&order=desc`,
          ac.signal,
        );
        const first = [...page.events].reverse();
        setEvents(first);
        setActivity(first.reduce(nextActivity, IDLE));
        setOldest({
          seq: first[0]?.event_seq ?? page.newest_seq + 1,
          available: page.oldest_available_seq,
        });
        let buffered: EventEnvelope[] = [];
        let scheduled = false;
        // Frames are applied once per animation frame, so a burst of events is one render.
        const flush = () => {
          scheduled = false;
          const batch = buffered;
          buffered = [];
          setEvents((prev) => {
            const next = prev.concat(batch);
            return next.length > HOLD ? next.slice(next.length - HOLD) : next;
          });
          setActivity((s) => batch.reduce(nextActivity, s));
        };
        await follow(
          `/control/agents/${enc}/events/stream`,
          page.newest_seq,
          (f) => {
            try {
              buffered.push(JSON.parse(f.data) as EventEnvelope);
            } catch {
              return;
            }
            if (!scheduled) {
              scheduled = true;
              requestAnimationFrame(flush);
            }
          },
          (isLive, err) => {
            setLive(isLive);
            if (err) setError(err);
            else if (isLive) setError(null);
          },
          ac.signal,
        );
      } catch (err) {
        if (ac.signal.aborted) return;
        if (err instanceof ApiError && err.status === 401) onAuthLost();
        setError(err instanceof Error ? err.message : String(err));
      }
    })();
    return () => ac.abort();
  }, [enc, onAuthLost]);

  const items = useMemo(() => {
    const out: PresentationItem[] = [];
    for (const e of events) {
      const it = present(e);
      if (it && shows(it, level)) out.push(it);
    }
    return out;
  }, [events, level]);

  // Older events come a page at a time, when the view reaches the top (or on request).
  const loading = useRef(false);
  const older = async () => {
    if (!oldest || loading.current || oldest.seq <= oldest.available) return;
    loading.current = true;
    try {
      const page = await get<EventsPage>(
        `/control/agents/${enc}/events?limit=${PAGE}&order=desc&before_seq=${oldest.seq}`,
      );
      const more = [...page.events].reverse();
      setEvents((prev) => more.concat(prev));
      setOldest({
        seq: more[0]?.event_seq ?? page.oldest_available_seq,
        available: page.oldest_available_seq,
      });
    } finally {
      loading.current = false;
    }
  };
  const olderRef = useRef(older);
  olderRef.current = older;

  const renderRow = useCallback((it: PresentationItem) => {
    const t = rowText(it);
    return (
      <button
        type="button"
        tabIndex={-1}
        className={`item t-${it.tone} c-${it.category}`}
        onClick={() => setSelected(it)}
        data-seq={it.seq}
      >
        <span className="ts">{t.ts}</span>
        <span className="title">{t.title}</span>
        <span className="summary">{t.summary}</span>
      </button>
    );
  }, []);
  const onReachTop = useCallback(() => void olderRef.current(), []);

  return (
    <div className="conv">
      <div className="bar">
        <label>
          Display{" "}
          <select value={level} onChange={(e) => setLevel(e.target.value as DisplayLevel)}>
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </label>
        <span className={live ? "good" : "dim"} data-testid="live">
          {live ? "live" : "connecting"}
        </span>
        {oldest && oldest.seq > oldest.available ? (
          <button type="button" className="quiet" onClick={() => void older()}>
            Load older
          </button>
        ) : null}
        <span className="dim">{items.length} items</span>
      </div>
      <ErrorLine error={error} />
      <div className="split">
        <VirtualList
          label="Conversation"
          items={items}
          rowHeight={ROW}
          height={height}
          follow
          onReachTop={onReachTop}
          keyOf={seqOf}
          render={renderRow}
        />
        <aside className="detail" tabIndex={0} aria-label="Selected item">
          {selected ? (
            <Detail it={selected} level={level} />
          ) : (
            <p className="dim">Select an item to read it whole.</p>
          )}
        </aside>
      </div>
      <ActivityLine activity={activity} />
      <Composer id={id} />
    </div>
  );
}

function Detail({ it, level }: { it: PresentationItem; level: DisplayLevel }) {
  return (
    <div>
      <h2>{cut(it.title, 200)}</h2>
      <p className="dim">
        {it.ts} · {it.category} · seq {it.seq}
      </p>
      {it.summary ? <p>{cut(it.summary, 2000)}</p> : null}
      {it.body ? (
        <pre tabIndex={0} className="body">
          {cut(it.body, 100_000)}
        </pre>
      ) : null}
      {level === "debug" && it.debug_body ? (
        <pre tabIndex={0} className="body">
          {cut(it.debug_body, 100_000)}
        </pre>
      ) : null}
      {level === "debug" && it.detail ? (
        <pre tabIndex={0} className="body dim">
          {cut(it.detail, 20_000)}
        </pre>
      ) : null}
    </div>
  );
}

function Composer({ id }: { id: string }) {
  const enc = encodeURIComponent(id);
  const [text, setText] = useState("");
  const [note, setNote] = useState<string | null>(null);
  const run = async (what: string, f: () => Promise<unknown>) => {
    try {
      await f();
      setNote(`${what}: done`);
    } catch (err) {
      setNote(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  const send = (priority?: "interject") =>
    run(priority ? "interject" : "prompt", async () => {
      if (!text.trim()) throw new Error("write something first");
      await post(`/control/agents/${enc}/prompt`, priority ? { text, priority } : { text });
      setText("");
    });
  const control = (action: "pause" | "resume" | "stop") =>
    run(action, () => post(`/control/agents/${enc}/control`, { action }));
  return (
    <form
      className="composer"
      aria-label="Composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label htmlFor="prompt" className="sr">
        Prompt
      </label>
      <textarea
        id="prompt"
        value={text}
        maxLength={100_000}
        rows={3}
        placeholder="Prompt the agent (Ctrl+Enter sends)"
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            void send();
          }
        }}
      />
      <div className="buttons">
        <button type="submit">Send</button>
        <button type="button" onClick={() => void send("interject")}>
          Interject
        </button>
        <button type="button" onClick={() => void control("pause")}>
          Pause
        </button>
        <button type="button" onClick={() => void control("resume")}>
          Resume
        </button>
        <button type="button" onClick={() => void control("stop")}>
          Stop
        </button>
        <button
          type="button"
          className="danger"
          onClick={() =>
            void run("abort", () => post(`/control/agents/${enc}/current-run/abort`, {}))
          }
        >
          Abort run
        </button>
        <span role="status" className="dim">
          {note}
        </span>
      </div>
    </form>
  );
}

type Task = {
  task_id: string;
  kind: string;
  status: string;
  summary?: string;
  command?: { cmd?: string } | null;
  created_at?: string;
};

function TasksTab({ id }: { id: string }) {
  const enc = encodeURIComponent(id);
  const { data, error, reload } = usePoll<{ tasks: Task[] }>(`/control/agents/${enc}/tasks`, 1500);
  const [open, setOpen] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  return (
    <div>
      <ErrorLine error={error} />
      <table className="grid" data-testid="tasks">
        <thead>
          <tr>
            <th scope="col">Task</th>
            <th scope="col">Kind</th>
            <th scope="col">Status</th>
            <th scope="col">What</th>
            <th scope="col">
              <span className="sr">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(data?.tasks ?? []).map((t) => (
            <tr key={t.task_id} data-task={t.task_id}>
              <td>
                <button type="button" className="link" onClick={() => setOpen(t.task_id)}>
                  {t.task_id}
                </button>
              </td>
              <td>{t.kind}</td>
              <td data-testid="task-status">{t.status}</td>
              <td>{cut(t.summary ?? t.command?.cmd ?? "", 120)}</td>
              <td>
                {["queued", "running", "cancelling"].includes(t.status) ? (
                  <button
                    type="button"
                    className="danger"
                    onClick={async () => {
                      try {
                        await post(
                          `/control/agents/${enc}/tasks/${encodeURIComponent(t.task_id)}/stop`,
                          {},
                        );
                        setNote(`stop requested for ${t.task_id}`);
                      } catch (err) {
                        setNote(err instanceof Error ? err.message : String(err));
                      }
                      reload();
                    }}
                  >
                    Stop {t.task_id}
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p role="status" className="dim">
        {note}
      </p>
      {data && data.tasks.length === 0 ? <p className="dim">No tasks.</p> : null}
      {open ? <TaskOutput agent={id} task={open} /> : null}
    </div>
  );
}

function TaskOutput({ agent, task }: { agent: string; task: string }) {
  const path = `/control/agents/${encodeURIComponent(agent)}/tasks/${encodeURIComponent(task)}/output`;
  const { data } = usePoll<{
    task?: { output_preview?: string | null; status?: string };
    retrieval_status?: string;
  }>(path, 1000);
  const text = data
    ? (data.task?.output_preview ?? `(${data.retrieval_status ?? "no output yet"})`)
    : "…";
  return (
    <section aria-label={`Output of ${task}`}>
      <h2>Output of {task}</h2>
      <pre tabIndex={0} className="body" data-testid="task-output">
        {cut(text, 200_000)}
      </pre>
    </section>
  );
}

type WorkItem = {
  id: string;
  objective: string;
  state?: string;
  status?: string;
  plan_status?: string;
  blocked_by?: unknown;
};

function WorkTab({ id }: { id: string }) {
  const enc = encodeURIComponent(id);
  const { data, error } = usePoll<{ work_items: WorkItem[] }>(
    `/control/agents/${enc}/work-items?limit=200`,
    3000,
  );
  const [open, setOpen] = useState<string | null>(null);
  const detail = usePoll<Record<string, unknown>>(
    open ? `/control/agents/${enc}/work-items/${encodeURIComponent(open)}` : "/ui/session",
    open ? 3000 : 0,
  );
  return (
    <div className="split">
      <div>
        <ErrorLine error={error} />
        <ul className="plain">
          {(data?.work_items ?? []).map((w) => (
            <li key={w.id}>
              <button type="button" className="link" onClick={() => setOpen(w.id)}>
                {cut(w.objective, 120)}
              </button>{" "}
              <span className="tag">{w.state ?? w.status ?? w.plan_status ?? ""}</span>
            </li>
          ))}
        </ul>
        {data && data.work_items.length === 0 ? <p className="dim">No work items.</p> : null}
      </div>
      <aside className="detail" tabIndex={0} aria-label="Work item">
        {open && detail.data ? (
          <Fields value={detail.data.work_item} />
        ) : (
          <p className="dim">Select a work item: plan, todos, blockers and reports.</p>
        )}
      </aside>
    </div>
  );
}

/** A record's fields as a definition list; nested values as bounded JSON text. */
function Fields({ value }: { value: unknown }) {
  if (!value || typeof value !== "object")
    return (
      <pre tabIndex={0} className="body">
        {cut(String(value), 20_000)}
      </pre>
    );
  return (
    <dl className="fields">
      {Object.entries(value as Record<string, unknown>).map(([k, v]) => (
        <div key={k}>
          <dt>{k.replaceAll("_", " ")}</dt>
          <dd>
            {typeof v === "object" && v !== null ? (
              <pre tabIndex={0} className="body">
                {cut(JSON.stringify(v, null, 2), 20_000)}
              </pre>
            ) : (
              cut(String(v), 2_000)
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

type Timer = {
  timer_id: string;
  summary?: string;
  status?: string;
  next_fire_at?: string | null;
  schedule?: unknown;
};

function TimersTab({ id }: { id: string }) {
  const enc = encodeURIComponent(id);
  const { data, error } = usePoll<{ timers: Timer[] }>(`/control/agents/${enc}/timers`, 3000);
  const [trigger, setTrigger] = useState<Record<string, unknown> | null>(null);
  const [revealed, setRevealed] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    get<{
      agents: {
        agent_id: string;
        waiting: { external_trigger: Record<string, unknown> | null } | null;
      }[];
    }>("/ui/api/overview")
      .then((o) =>
        setTrigger(o.agents.find((a) => a.agent_id === id)?.waiting?.external_trigger ?? null),
      )
      .catch(() => {});
  }, [id]);
  return (
    <div>
      <ErrorLine error={error} />
      <h2>Timers</h2>
      <ul className="plain" data-testid="timers">
        {(data?.timers ?? []).map((t) => (
          <li key={t.timer_id}>
            <code>{t.timer_id}</code> {cut(t.summary ?? "", 120)}{" "}
            <span className="tag">{t.status ?? ""}</span>{" "}
            {t.next_fire_at ? <time dateTime={t.next_fire_at}>{t.next_fire_at}</time> : null}
          </li>
        ))}
      </ul>
      {data && data.timers.length === 0 ? <p className="dim">No timers.</p> : null}
      <h2>External trigger</h2>
      {trigger ? (
        <div>
          <p>
            URL: <code data-testid="trigger-url">{revealed ?? "•••••••• (hidden)"}</code>{" "}
            {revealed ? (
              <button type="button" onClick={() => setRevealed(null)}>
                Hide
              </button>
            ) : (
              <button
                type="button"
                onClick={async () => {
                  try {
                    const r = await get<{ external_trigger: { trigger_url: string | null } }>(
                      `/control/agents/${enc}/external-trigger`,
                    );
                    setRevealed(
                      r.external_trigger.trigger_url ?? "(no URL: the host has no address)",
                    );
                  } catch (err) {
                    setNote(err instanceof Error ? err.message : String(err));
                  }
                }}
              >
                Reveal secret URL
              </button>
            )}
          </p>
          <p className="dim">{note}</p>
        </div>
      ) : (
        <p className="dim">No external trigger.</p>
      )}
    </div>
  );
}

type Child = { agent_id: string; status: string; supervision_state: string | null };

function ChildrenTab({ id }: { id: string }) {
  // The status route answers with the agent's summary, children included.
  const { data } = usePoll<{ children?: { entries: Child[] } }>(
    `/control/agents/${encodeURIComponent(id)}/status`,
    3000,
  );
  const kids = data?.children?.entries ?? [];
  return (
    <div>
      <ul className="tree" data-testid="children">
        {kids.map((k) => (
          <li key={k.agent_id}>
            <a href={`#/agent/${encodeURIComponent(k.agent_id)}`}>{k.agent_id}</a>{" "}
            <span className="tag">{k.status}</span>{" "}
            {k.supervision_state ? <span className="dim">{k.supervision_state}</span> : null}
          </li>
        ))}
      </ul>
      {kids.length === 0 ? <p className="dim">No children.</p> : null}
    </div>
  );
}
