// The operator console (`holon tui`): a client over HTTP + SSE only. It shows one agent's
// conversation (operator prompts, results, failures; more at `/display 4|5`) rendered by the
// presentation layer, an always-available composer (Enter submits; Alt+Enter or
// `/interject …` interjects into the running turn), a state line (workspace and projection,
// queue, current work item, access), and overlays for the planes that have landed (agents,
// transcript, raw events, tasks, work items, timers and triggers, workspaces, child agents,
// memory, actions, help) closed by Esc.
// Closing it changes nothing in the runtime; it follows the event stream across host
// restarts (client/follow.ts). Written with createElement: Node strips types, not JSX.
import { resolve } from "node:path";
import { asksIndicator, pendingAsks, type PendingAsk } from "./asks.ts";
import { createElement as h, useEffect, useRef, useState, type ReactElement } from "react";
import { Box, Text, useApp, useInput, useWindowSize } from "ink";
import type { HolonClient } from "../client/client.ts";
import { followEvents } from "../client/follow.ts";
import {
  IDLE,
  nextActivity,
  noPaint,
  parseDisplayLevel,
  presentEvent,
  presentTranscriptEntry,
  renderActivity,
  renderItem,
  shows,
  type ActivityState,
  type DisplayLevel,
  type PresentationItem,
} from "../client/presentation.ts";
import type { EventEnvelope } from "../domain/events.ts";
import type { StoredTranscriptEntry } from "../domain/transcript.ts";
import { childrenLines, memoryLines, OverlayBox, promptLines } from "./views.ts";

export type TuiProps = {
  /** Find the host (again after a restart). */
  connect: () => HolonClient | undefined;
  agentId?: string | undefined;
  display?: DisplayLevel | undefined;
  /** The terminal's height and width (default: the terminal's, followed on resize). */
  rows?: number;
  columns?: number;
};

/** `tui.alternate_screen`: `auto` is the alternate screen on a terminal whose TERM is not dumb. */
export function wantsAlternateScreen(
  setting: string | undefined,
  out: { isTTY?: boolean | undefined },
  term: string | undefined,
): boolean {
  if (setting === "always") return true;
  if (setting === "never") return false;
  return Boolean(out.isTTY) && term !== "dumb";
}

/** Lines of the frame that are not the conversation: header, state, activity, notice, composer. */
const CHROME_ROWS = 5;

type Overlay =
  | "agents"
  | "transcript"
  | "events"
  | "tasks"
  | "work"
  | "timers"
  | "workspaces"
  | "children"
  | "memory"
  | "actions"
  | "prompt"
  | "help";

const OVERLAYS: readonly Overlay[] = [
  "agents",
  "transcript",
  "events",
  "tasks",
  "work",
  "timers",
  "workspaces",
  "children",
  "memory",
  "actions",
  "help",
];

const HELP = [
  "Enter             send the composer to the agent",
  "Alt+Enter         interject into the running turn (or /interject <text>)",
  "Esc               close an overlay",
  "/display 3|4|5    info, verbose or debug (also the names)",
  "PgUp / PgDn       scroll the conversation back and forward",
  "/agent <id>       switch agent",
  "/agents /transcript /events /tasks /work /timers /workspaces /actions /help   overlays",
  "/children [id]    lineage and private children of the agent (or of id), with their tasks",
  "/memory           working memory, episodes and compaction (when the host has them)",
  "/prompt [text]    the prompt the next turn would send",
  "/wake /pause /resume /stop   agent control",
  "/refresh          re-read the agent's state;  /clear-status  clear the notice line",
  "/quit or Ctrl+C   leave (the runtime keeps running)",
];

// Local actions: what the console itself can do for the operator. Entering or leaving a
// workspace rewrites the agent's execution root under it, so the console does not do that
// behind the agent's back (the agent uses UseWorkspace; the operator `holon workspace exit`).
const ACTIONS = [
  "/attach <path>    attach a workspace to the agent (it is not switched to)",
  "/refresh          re-read the agent's state (workspace, queue, work item)",
  "/clear-status     clear the notice line",
  "/events           the raw event log",
  "/prompt [text]    debug: the prompt the next turn would send, section by section",
  "/display 5        debug items: provider rounds, state changes, ids and durations",
  "not here: entering or leaving a workspace (the agent's UseWorkspace, or",
  "  holon workspace exit <agent>)",
];

/** The parts of `GET /agents/:id/state` the console shows. */
type AgentStateView = {
  agent?: { status?: string; pending?: number };
  workspace?: {
    execution_root?: string;
    cwd?: string;
    projection_kind?: string;
    worktree_session?: { branch?: string } | null;
  };
  work_items?: { id: string; objective: string; is_current?: boolean }[];
  timers?: any[];
  external_triggers?: any[];
  newest_seq?: number;
};

function stateLine(state: AgentStateView | undefined, access: string): string {
  if (!state) return access ? `access ${access}` : "";
  const ws = state.workspace;
  const parts: string[] = [];
  if (ws?.execution_root) {
    const branch = ws.worktree_session?.branch;
    parts.push(
      `workspace ${ws.execution_root} (${ws.projection_kind ?? "?"}${branch ? `, worktree ${branch}` : ""})`,
    );
  }
  parts.push(`queue ${state.agent?.pending ?? 0}`);
  const current = state.work_items?.find((w) => w.is_current);
  if (current) parts.push(`work: ${current.objective.slice(0, 60)}`);
  if (access) parts.push(`access ${access}`);
  return parts.join(" · ");
}

const MAX_ITEMS = 500;

function lines(items: unknown[] | undefined, f: (x: any) => string): string[] {
  return (items ?? []).map(f);
}

export function App(props: TuiProps): ReactElement {
  const { exit } = useApp();
  const [agentId, setAgentId] = useState<string | undefined>(props.agentId);
  const [display, setDisplay] = useState<DisplayLevel>(props.display ?? "info");
  // The stream's handler outlives renders: it reads the level through a ref.
  const displayRef = useRef(display);
  displayRef.current = display;
  const [items, setItems] = useState<PresentationItem[]>([]);
  const [input, setInputState] = useState("");
  // Keys can arrive faster than renders: the composer's text lives in a ref as well.
  const inputRef = useRef("");
  const setInput = (f: string | ((s: string) => string)) => {
    inputRef.current = typeof f === "function" ? f(inputRef.current) : f;
    setInputState(inputRef.current);
  };
  const [overlay, setOverlay] = useState<Overlay | null>(null);
  const [overlayLines, setOverlayLines] = useState<string[]>([]);
  const [status, setStatus] = useState("connecting…");
  const [agentStatus, setAgentStatus] = useState("");
  const [notice, setNotice] = useState("");
  const [agentState, setAgentState] = useState<AgentStateView | undefined>(undefined);
  const [access, setAccess] = useState("");
  const [asks, setAsks] = useState<PendingAsk[] | undefined>(undefined);
  const [stateTick, setStateTick] = useState(0);
  const [activity, setActivity] = useState<ActivityState>(IDLE);
  const [now, setNow] = useState(() => Date.now());
  // How many items the view is scrolled back from the newest (0 follows the stream).
  const [scroll, setScroll] = useState(0);
  const size = useWindowSize();
  const clientRef = useRef<HolonClient | undefined>(undefined);

  const client = (): HolonClient | undefined => {
    clientRef.current = props.connect() ?? clientRef.current;
    return clientRef.current;
  };

  // Which agent: the given one, else the host's default.
  useEffect(() => {
    if (agentId) return;
    let stop = false;
    const tryOnce = async () => {
      while (!stop) {
        const c = client();
        const res = c
          ? await c.call<{ default_agent: string }>("GET", "/").catch(() => undefined)
          : undefined;
        if (res) return setAgentId(res.default_agent);
        setStatus("no runtime is running; waiting for one (holon daemon start)");
        await new Promise((r) => setTimeout(r, 500));
      }
    };
    void tryOnce();
    return () => {
      stop = true;
    };
  }, [agentId]);

  // The state line: the agent's /state (workspace, queue, work item) and the access mode from
  // /handshake, re-read when asked (/refresh), after a reconnect and, debounced, as events
  // arrive.
  useEffect(() => {
    if (!agentId) return;
    let stop = false;
    const c = client();
    if (!c) return;
    void (async () => {
      const [st, hs, pending] = await Promise.all([
        c
          .call<AgentStateView>("GET", `/agents/${encodeURIComponent(agentId)}/state`)
          .catch(() => undefined),
        c
          .call<{ auth?: { access?: string; transport?: string } }>("GET", "/handshake")
          .catch(() => undefined),
        pendingAsks(c),
      ]);
      if (stop) return;
      setAsks(pending);
      if (st) setAgentState(st);
      if (hs?.auth) setAccess(`${hs.auth.access ?? "?"} over ${hs.auth.transport ?? "?"}`);
    })();
    return () => {
      stop = true;
    };
  }, [agentId, stateTick]);
  const refreshTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const refreshSoon = () => {
    if (refreshTimer.current) return;
    refreshTimer.current = setTimeout(() => {
      refreshTimer.current = undefined;
      setStateTick((n) => n + 1);
    }, 250);
  };
  useEffect(() => () => clearTimeout(refreshTimer.current), []);

  // History, then the live stream (resumed across host restarts).
  useEffect(() => {
    if (!agentId) return;
    const ctl = new AbortController();
    setItems([]);
    setActivity(IDLE);
    setScroll(0);
    // Nothing of the previous agent stays on screen.
    setAgentStatus("");
    setAgentState(undefined);
    const run = async () => {
      const c = client();
      let after = 0;
      if (c) {
        const path = `/agents/${encodeURIComponent(agentId)}`;
        const res = await c
          .call<{ events: EventEnvelope[]; newest_seq: number }>(
            "GET",
            `${path}/events?limit=200&order=desc`,
          )
          .catch(() => undefined);
        if (res) {
          after = res.newest_seq;
          const history = res.events.reverse();
          setItems(history.map(presentEvent));
          setActivity(history.reduce(nextActivity, IDLE));
        }
        const st = await c.call<{ status: string }>("GET", `${path}/status`).catch(() => undefined);
        if (st) setAgentStatus(st.status);
      }
      setStatus("live");
      await followEvents({
        connect: client,
        agentId,
        afterSeq: after,
        signal: ctl.signal,
        minDelayMs: 100,
        maxDelayMs: 1000,
        onEvent: (e) => {
          if (e.type === "agent_state_changed") setAgentStatus(String(e.payload.to));
          const it = presentEvent(e);
          setItems((prev) => [...prev, it].slice(-MAX_ITEMS));
          setActivity((prev) => nextActivity(prev, e));
          // Scrolled back, the view stays on what the operator is reading.
          if (shows(it, displayRef.current)) setScroll((n) => (n > 0 ? n + 1 : n));
          refreshSoon();
        },
        onNotice: (n) => {
          if (n.kind === "disconnected") setStatus("runtime unreachable; reconnecting…");
          else if (n.kind === "reconnected") {
            setStatus("live (reconnected)");
            refreshSoon();
          } else if (n.kind === "replay_unavailable")
            setNotice(`events up to ${n.resumed_after_seq} were removed by retention`);
        },
      }).catch((err: unknown) => setStatus(`stream failed: ${(err as Error).message}`));
    };
    void run();
    return () => ctl.abort();
  }, [agentId]);

  // The activity line's clock keeps moving while something runs.
  const busy = activity.current !== null;
  useEffect(() => {
    if (!busy) return;
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), 200);
    return () => clearInterval(t);
  }, [busy]);

  const openOverlay = async (which: Overlay, arg = "") => {
    setOverlay(which);
    if (which === "help") return setOverlayLines(HELP);
    if (which === "actions") return setOverlayLines(ACTIONS);
    setOverlayLines(["loading…"]);
    const c = client();
    if (!c || !agentId) return setOverlayLines(["no runtime"]);
    const a = `/agents/${encodeURIComponent(agentId)}`;
    try {
      switch (which) {
        case "agents": {
          // With the control token (always over the Unix socket) the list includes private
          // children, shown under their parent; archived agents are only counted.
          const r = await c
            .call<{ agents: any[] }>("GET", "/agents/list?all=true")
            .catch(() => c.call<{ agents: any[] }>("GET", "/agents/list"));
          const live = r.agents.filter((x) => !x.archived);
          const ids = new Set(live.map((x) => x.agent_id));
          const row = (x: any, depth: number) =>
            `${x.agent_id === agentId ? "›" : " "} ${"  ".repeat(depth)}${x.agent_id}  ${x.status}` +
            (x.visibility === "private" ? "  (private" : "") +
            (x.visibility === "private" && x.lineage_parent_agent_id
              ? `, child of ${x.lineage_parent_agent_id})`
              : x.visibility === "private"
                ? ")"
                : "");
          const out: string[] = [];
          const walk = (parent: string | undefined, depth: number) => {
            for (const x of live) {
              const sup = x.visibility === "private" ? x.lineage_parent_agent_id : undefined;
              const attached = sup && ids.has(sup) ? sup : undefined;
              if (attached !== parent || depth > 8) continue;
              out.push(row(x, depth));
              walk(x.agent_id, depth + 1);
            }
          };
          walk(undefined, 0);
          const archived = r.agents.length - live.length;
          if (archived) out.push(`(${archived} archived, not shown)`);
          return setOverlayLines(out);
        }
        case "children": {
          // `/children <id>` looks at another agent, a private child included (its lineage,
          // its own children); the supervision tasks are read from the public task list.
          const who = `/agents/${encodeURIComponent(arg || agentId)}`;
          const [got, tasks] = await Promise.all([
            c.call<unknown>("GET", `/control${who}/agent`),
            c.call<{ tasks: unknown[] }>("GET", `${who}/tasks`).catch(() => undefined),
          ]);
          return setOverlayLines(childrenLines(got, tasks?.tasks));
        }
        case "memory": {
          const st = await c.call<Record<string, unknown>>("GET", `${a}/state`);
          // The prompt preview adds token totals where the host reports them.
          const preview = st.memory
            ? await c.call<unknown>("GET", `/control${a}/debug/prompt`).catch(() => undefined)
            : undefined;
          return setOverlayLines(memoryLines(st, preview));
        }
        case "transcript": {
          const r = await c.call<{ entries: StoredTranscriptEntry[] }>(
            "GET",
            `${a}/transcript?limit=30`,
          );
          return setOverlayLines(
            r.entries
              .map(presentTranscriptEntry)
              .filter((it) => shows(it, display))
              .flatMap((it) => renderItem(it, display, noPaint).split("\n")),
          );
        }
        case "prompt": {
          const q = arg ? `?text=${encodeURIComponent(arg)}` : "";
          const r = await c.call<unknown>("GET", `/control${a}/debug/prompt${q}`);
          return setOverlayLines(promptLines(r));
        }
        case "events": {
          const r = await c.call<{ events: EventEnvelope[] }>(
            "GET",
            `${a}/events?limit=30&order=desc`,
          );
          return setOverlayLines(
            r.events
              .reverse()
              .map((e) => `#${e.event_seq} ${e.ts.slice(11, 19)} ${e.type}`)
              .concat(r.events.length ? [] : ["(no events)"]),
          );
        }
        case "tasks": {
          const r = await c.call<{ tasks: any[] }>("GET", `${a}/tasks`);
          return setOverlayLines(
            lines(
              r.tasks,
              (t) => `${t.task_id ?? t.id}  ${t.status}  ${t.summary ?? t.command?.cmd ?? ""}`,
            ),
          );
        }
        case "work": {
          const r = await c.call<{ work_items: any[] }>("GET", `${a}/work-items`);
          const out = lines(
            r.work_items,
            (w) =>
              `${w.is_current ? "›" : " "} ${w.id}  ${w.view ?? w.readiness ?? ""}  ${w.objective}` +
              (w.todo_progress?.total
                ? `  [${w.todo_progress.done}/${w.todo_progress.total}]`
                : "") +
              (w.blocked_by ? `  blocked: ${w.blocked_by}` : ""),
          );
          return setOverlayLines(out.length ? out : ["(no work items)"]);
        }
        case "timers": {
          // Timers and the external trigger both come from the agent's /state (reading the
          // trigger through /control would reveal its secret URL).
          const r = await c.call<AgentStateView>("GET", `${a}/state`);
          const out = lines(
            r.timers,
            (t) =>
              `timer ${t.timer_id}  ${t.kind} ${t.status}  next ${t.next_fire_at ?? "-"}  ${t.summary ?? ""}`,
          );
          if (!out.length) out.push("(no timers)");
          for (const t of r.external_triggers ?? []) {
            out.push(
              `trigger ${t.external_trigger_id}  ${t.status}  ${t.delivery_count} deliveries` +
                (t.last_delivery_at ? `, last ${t.last_delivery_at}` : ""),
            );
          }
          return setOverlayLines(out);
        }
        case "workspaces": {
          const r = await c.call<{ active?: any; attached?: any[] }>("GET", `${a}/workspaces`);
          const act = r.active ?? {};
          const out = [
            `active: ${act.workspace_id ?? "?"}  ${act.execution_root ?? ""}  (${act.projection_kind ?? "?"}, ${act.mode ?? "?"})`,
            `cwd: ${act.cwd ?? "?"}`,
            "attached:",
            ...lines(
              r.attached,
              (w) =>
                `${w.active ? "*" : " "} ${w.workspace_id}  ${w.workspace_anchor ?? "?"}` +
                (w.available === false ? "  (missing)" : ""),
            ),
          ];
          return setOverlayLines(out);
        }
      }
    } catch (err) {
      const kind = (err as { kind?: unknown }).kind;
      setOverlayLines([
        `failed: ${typeof kind === "string" ? `${kind}: ` : ""}${(err as Error).message}`,
      ]);
    }
  };

  const send = async (text: string, interject: boolean) => {
    const c = client();
    if (!c || !agentId) return setNotice("no runtime to send to");
    try {
      const body: Record<string, unknown> = { text };
      if (interject) body.priority = "interject";
      await c.call("POST", `/control/agents/${encodeURIComponent(agentId)}/prompt`, body);
      setNotice(interject ? "interjected" : "");
    } catch (err) {
      setNotice(`not sent: ${(err as Error).message}`);
    }
  };

  const control = async (action: string) => {
    const c = client();
    if (!c || !agentId) return;
    try {
      await c.call("POST", `/control/agents/${encodeURIComponent(agentId)}/control`, { action });
      setNotice(`${action}: requested`);
    } catch (err) {
      setNotice(`${action} failed: ${(err as Error).message}`);
    }
  };

  const attach = async (path: string) => {
    const c = client();
    if (!c || !agentId) return setNotice("no runtime");
    if (!path) return setNotice("/attach <path>");
    try {
      await c.call("POST", `/control/agents/${encodeURIComponent(agentId)}/workspaces/attach`, {
        path: resolve(path),
      });
      setNotice(`attached ${resolve(path)}`);
      setStateTick((n) => n + 1);
    } catch (err) {
      setNotice(`attach failed: ${(err as Error).message}`);
    }
  };

  const command = (text: string): void => {
    const [cmd, ...rest] = text.slice(1).split(/\s+/);
    const arg = rest.join(" ");
    switch (cmd) {
      case "display": {
        const level = parseDisplayLevel(arg);
        if (!level || level === "trace") return setNotice("/display 3|4|5 (info, verbose, debug)");
        setDisplay(level);
        return setNotice(`display: ${level}`);
      }
      case "agent":
        if (!arg) return void openOverlay("agents");
        return setAgentId(arg);
      case "refresh":
        setStateTick((n) => n + 1);
        return setNotice("state refreshed");
      case "clear-status":
        return setNotice("");
      case "attach":
        return void attach(arg);
      case "interject":
        return void send(arg, true);
      case "wake":
      case "pause":
      case "resume":
      case "stop":
        return void control(cmd);
      case "quit":
      case "exit":
        return exit();
      case "prompt":
        return void openOverlay("prompt", arg);
      case "children":
        return void openOverlay("children", arg);
      default:
        if ((OVERLAYS as readonly string[]).includes(cmd ?? "")) {
          return void openOverlay(cmd as Overlay);
        }
        return setNotice(`unknown command /${cmd}; /help lists them`);
    }
  };

  useInput((ch, key) => {
    if (key.ctrl && ch === "c") return exit();
    if (key.escape) {
      setOverlay(null);
      return;
    }
    if (key.pageUp) return setScroll((n) => Math.min(n + pageItems, Math.max(0, visibleCount - 1)));
    if (key.pageDown) return setScroll((n) => Math.max(0, n - pageItems));
    const submit = (interject: boolean) => {
      const text = inputRef.current.trim();
      setInput("");
      if (!text) return;
      if (text.startsWith("/")) return command(text);
      return void send(text, interject);
    };
    if (key.return) return submit(key.meta);
    // Pasted or piped text arrives as one chunk: a line break inside it submits.
    if (ch.length > 1 && /[\r\n]/.test(ch)) {
      const parts = ch.split(/\r\n|\r|\n/);
      parts.forEach((part, i) => {
        setInput((s) => s + part);
        if (i < parts.length - 1) submit(false);
      });
      return;
    }
    if (key.backspace || key.delete) return setInput((s) => s.slice(0, -1));
    if (ch && !key.ctrl && !key.meta) setInput((s) => s + ch);
  });

  const visible = items.filter((it) => shows(it, display));
  // A fixed-height frame, one row short of the terminal: Ink then rewrites it in place, so
  // the header stays on screen and nothing is reprinted into the scrollback.
  const height = Math.max(CHROME_ROWS + 1, (props.rows ?? size.rows) - 1);
  const width = props.columns ?? size.columns;
  const convRows = height - CHROME_ROWS;
  const visibleCount = visible.length;
  const pageItems = Math.max(1, Math.floor(convRows / 2));
  const back = Math.min(scroll, Math.max(0, visibleCount - 1));
  // Items wrap to the width; the box keeps the newest rows and cuts older ones at its top.
  const shown = visible.slice(Math.max(0, visibleCount - back - convRows), visibleCount - back);
  const line = (key: string, text: string, style: Record<string, unknown> = {}) =>
    h(Box, { key, height: 1, flexShrink: 0 }, h(Text, { wrap: "truncate-end", ...style }, text));
  const activityText = renderActivity(activity, now, width - 3);
  return h(
    Box,
    { flexDirection: "column", height, width },
    line(
      "header",
      `holon · ${agentId ?? "…"}${agentStatus ? ` (${agentStatus})` : ""} · ${display} · ${status}`,
      { bold: true },
    ),
    line("state", stateLine(agentState, access), { dimColor: true }),
    h(
      Box,
      {
        key: "body",
        flexDirection: "column",
        height: convRows,
        flexShrink: 0,
        overflow: "hidden",
        justifyContent: overlay ? "flex-start" : "flex-end",
      },
      overlay
        ? h(OverlayBox, { title: overlay, lines: overlayLines })
        : shown.length
          ? shown.map((it) =>
              h(
                Box,
                { key: `${it.source_event_kind}${it.seq}`, flexShrink: 0 },
                h(Text, { wrap: "wrap" }, renderItem(it, display, noPaint)),
              ),
            )
          : h(Text, { dimColor: true }, "(nothing yet at this display level)"),
    ),
    line(
      "activity",
      activityText ? `● ${activityText}` : `○ idle${agentStatus ? ` (${agentStatus})` : ""}`,
      activityText ? { color: "cyan" } : { dimColor: true },
    ),
    // The notice line: scrolling first, then a passing notice, then asks waiting on the operator.
    back > 0 || notice || !asksIndicator(asks, agentId)
      ? line("notice", back > 0 ? `scrolled back ${back} item(s); PgDn returns` : notice || " ", {
          dimColor: true,
        })
      : line("notice", asksIndicator(asks, agentId)!, { color: "yellow" }),
    h(
      Box,
      { key: "composer", height: 1, flexShrink: 0 },
      h(Text, { wrap: "truncate-start" }, `› ${input}`),
    ),
  );
}
