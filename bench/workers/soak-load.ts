// The soak's clients, forked so their work never shares the host's event loop:
// - one SSE stream per agent (reconnecting with Last-Event-ID), which is how turn ends are seen;
// - `promptLoops` operator loops: POST a prompt, wait for its `turn_terminal`, send the next
//   (every `execEvery`-th prompt asks the fake model for one ExecCommand round);
// - an open loop of public enqueues at `enqueuePerSec`, spread over the agents;
// - an open loop of one-shot timers at `timersPerSec` (POST /control/agents/:id/timers, due in
//   `timerDelayMs`), spread over the agents: each one fires into a turn of its agent;
// - every `taskEvery`-th prompt asks the fake model for an ExecCommand that yields at once
//   (`sleep 1`), so it runs on as a background task whose result comes back as one more turn.
// The streams count timer fires (`timer_fired`) and tasks started (`task_created`) and
// finished (`task_status_updated` to a terminal status).
//
// IPC protocol:
//   parent → { type: "start", ...SoakLoadConfig }     worker → { type: "started" }
//   parent → { type: "sample" }                        worker → { type: "sample", ...SoakWindow }
//   parent → { type: "stop" }                          worker → { type: "stopped", ...SoakWindow }
// A window covers the time since the previous sample; latencies are raw (ms) so the parent
// can pool them per minute.
import { Agent, request, type ClientRequest, type IncomingMessage } from "node:http";

export type SoakLoadConfig = {
  hostname: string;
  port: number;
  agents: string[];
  promptLoops: number;
  execEvery: number;
  enqueuePerSec: number;
  /** One-shot timers created per second over all agents (0 or absent: none). */
  timersPerSec?: number;
  /** How long after its creation a timer is due, [min, max] ms. */
  timerDelayMs?: [number, number];
  /** Every n-th prompt starts a background command task (0 or absent: none). */
  taskEvery?: number;
  /** A prompt whose turn has not ended after this long counts as an error. */
  promptTimeoutMs: number;
  /** Bearer token for the control routes (a host on TCP generates one), or null. */
  token: string | null;
};

export type SoakWindow = {
  turns: number;
  events: number;
  prompts: number;
  enqueues: number;
  promptLatencies: number[];
  enqueueLatencies: number[];
  errors: number;
  firstError: string | null;
  sseReconnects: number;
  timersCreated: number;
  timersFired: number;
  tasksStarted: number;
  tasksFinished: number;
};

let cfg: SoakLoadConfig;
let agent: Agent;
let running = false;
let win: SoakWindow = emptyWindow();
const totals = { errors: 0, firstError: null as string | null };

function emptyWindow(): SoakWindow {
  return {
    turns: 0,
    events: 0,
    prompts: 0,
    enqueues: 0,
    promptLatencies: [],
    enqueueLatencies: [],
    errors: 0,
    firstError: null,
    sseReconnects: 0,
    timersCreated: 0,
    timersFired: 0,
    tasksStarted: 0,
    tasksFinished: 0,
  };
}

function fail(what: string): void {
  win.errors++;
  win.firstError ??= what;
  totals.errors++;
  totals.firstError ??= what;
}

function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        hostname: cfg.hostname,
        port: cfg.port,
        path,
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(data),
          ...(cfg.token ? { authorization: `Bearer ${cfg.token}` } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`POST ${path} timed out`)));
    req.on("error", reject);
    req.end(data);
  });
}

// ---- turn ends, from the event streams ------------------------------------------------

/** Waiters for a message's turn end, and turn ends seen before anyone waited (fast turns). */
const waiting = new Map<string, (at: number) => void>();
const seenEnds = new Map<string, number>();

function turnEnded(messageId: string, at: number): void {
  const w = waiting.get(messageId);
  if (w) {
    waiting.delete(messageId);
    w(at);
  } else seenEnds.set(messageId, at);
}

function waitTurnEnd(messageId: string, timeoutMs: number): Promise<number | null> {
  const seen = seenEnds.get(messageId);
  if (seen !== undefined) {
    seenEnds.delete(messageId);
    return Promise.resolve(seen);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      waiting.delete(messageId);
      resolve(null);
    }, timeoutMs);
    waiting.set(messageId, (at) => {
      clearTimeout(timer);
      resolve(at);
    });
  });
}

const streams: ClientRequest[] = [];

function handleFrame(frame: string, now: number, stream: { lastId: string }): void {
  if (!frame.startsWith("id: ")) return;
  const nl = frame.indexOf("\n");
  stream.lastId = frame.slice(4, nl);
  win.events++;
  if (frame.startsWith("event: timer_fired", nl + 1)) win.timersFired++;
  else if (frame.startsWith("event: task_created", nl + 1)) win.tasksStarted++;
  else if (frame.startsWith("event: task_status_updated", nl + 1)) {
    if (/"status":"(completed|failed|cancelled)"/.test(frame)) win.tasksFinished++;
  }
  if (!frame.startsWith("event: turn_terminal", nl + 1)) return;
  win.turns++;
  const at = frame.indexOf("data: ");
  try {
    const envelope = JSON.parse(frame.slice(at + 6)) as { provenance?: { message_id?: string } };
    const id = envelope.provenance?.message_id;
    if (id) turnEnded(id, now);
  } catch {
    fail("unparsable turn_terminal frame");
  }
}

function openStream(agentId: string, state = { lastId: "" }, onOpen?: () => void): void {
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (cfg.token) headers.authorization = `Bearer ${cfg.token}`;
  if (state.lastId) headers["last-event-id"] = state.lastId;
  const req = request(
    {
      hostname: cfg.hostname,
      port: cfg.port,
      path: `/agents/${encodeURIComponent(agentId)}/events/stream`,
      headers,
    },
    (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        fail(`event stream for ${agentId}: HTTP ${res.statusCode}`);
        res.resume();
        return;
      }
      res.setEncoding("utf8");
      let buf = "";
      res.on("data", (chunk: string) => {
        buf += chunk;
        const now = performance.now();
        let idx: number;
        while ((idx = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          if (frame.startsWith(": connected")) onOpen?.();
          else handleFrame(frame, now, state);
        }
      });
      res.on("end", () => {
        if (!running) return;
        win.sseReconnects++;
        openStream(agentId, state);
      });
    },
  );
  req.on("error", (err) => {
    if (running) fail(`event stream for ${agentId}: ${err.message}`);
  });
  req.end();
  streams.push(req);
}

// ---- load -------------------------------------------------------------------------------

async function promptLoop(loop: number): Promise<void> {
  let n = 0;
  while (running) {
    const agentId = cfg.agents[(loop + cfg.promptLoops * n) % cfg.agents.length]!;
    n++;
    const exec = n % cfg.execEvery === 0;
    // Offset by one from the ExecCommand prompts, so a multiple of execEvery still gets tasks.
    const task = !exec && !!cfg.taskEvery && (n + 1) % cfg.taskEvery === 0;
    const t0 = performance.now();
    try {
      const res = await post(`/control/agents/${encodeURIComponent(agentId)}/prompt`, {
        text: `soak prompt ${loop}.${n}${exec ? " [exec] run true once" : ""}${task ? " [task] start sleep 1 in the background" : ""}`,
      });
      if (res.status !== 202) {
        fail(`prompt: HTTP ${res.status} ${res.text.slice(0, 200)}`);
        continue;
      }
      const messageId = (JSON.parse(res.text) as { message_id: string }).message_id;
      const end = await waitTurnEnd(messageId, cfg.promptTimeoutMs);
      if (end === null) {
        fail(`prompt ${messageId}: no turn end within ${cfg.promptTimeoutMs} ms`);
        continue;
      }
      win.prompts++;
      win.promptLatencies.push(end - t0);
    } catch (err) {
      fail(`prompt: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

let inFlightEnqueues = 0;
function enqueueLoop(): void {
  const gap = 1000 / cfg.enqueuePerSec;
  let next = performance.now();
  let n = 0;
  const tick = () => {
    if (!running) return;
    const now = performance.now();
    while (next <= now) {
      next += gap;
      if (inFlightEnqueues >= 64) {
        fail("enqueue: 64 requests in flight; skipped one");
        continue;
      }
      const agentId = cfg.agents[n++ % cfg.agents.length]!;
      const t0 = performance.now();
      inFlightEnqueues++;
      post(`/agents/${encodeURIComponent(agentId)}/enqueue`, {
        text: `soak channel event ${n}`,
      })
        .then((res) => {
          if (res.status !== 202) fail(`enqueue: HTTP ${res.status} ${res.text.slice(0, 200)}`);
          else {
            win.enqueues++;
            win.enqueueLatencies.push(performance.now() - t0);
          }
        })
        .catch((err: Error) => fail(`enqueue: ${err.message}`))
        .finally(() => inFlightEnqueues--);
    }
    setTimeout(tick, Math.max(1, next - performance.now()));
  };
  tick();
}

let inFlightTimers = 0;
function timerLoop(): void {
  const rate = cfg.timersPerSec ?? 0;
  if (rate <= 0) return;
  const [lo, hi] = cfg.timerDelayMs ?? [1_000, 3_000];
  const gap = 1000 / rate;
  let next = performance.now();
  let n = 0;
  const tick = () => {
    if (!running) return;
    const now = performance.now();
    while (next <= now) {
      next += gap;
      if (inFlightTimers >= 16) {
        fail("timer: 16 requests in flight; skipped one");
        continue;
      }
      // A different stride from the enqueues, so timers do not always land on the same agent.
      const agentId = cfg.agents[(n * 3 + 1) % cfg.agents.length]!;
      n++;
      inFlightTimers++;
      post(`/control/agents/${encodeURIComponent(agentId)}/timers`, {
        summary: `soak timer ${n}`,
        duration_ms: Math.round(lo + Math.random() * (hi - lo)),
      })
        .then((res) => {
          if (res.status !== 201) fail(`timer: HTTP ${res.status} ${res.text.slice(0, 200)}`);
          else win.timersCreated++;
        })
        .catch((err: Error) => fail(`timer: ${err.message}`))
        .finally(() => inFlightTimers--);
    }
    setTimeout(tick, Math.max(1, next - performance.now()));
  };
  tick();
}

let loops: Promise<void>[] = [];

async function start(c: SoakLoadConfig): Promise<void> {
  cfg = c;
  agent = new Agent({ keepAlive: true, maxSockets: 32 });
  running = true;
  await Promise.all(
    cfg.agents.map((id) => new Promise<void>((resolve) => openStream(id, { lastId: "" }, resolve))),
  );
  // Turn ends older than a minute will never be waited for; keep the map small.
  setInterval(() => {
    const cutoff = performance.now() - 60_000;
    for (const [id, at] of seenEnds) if (at < cutoff) seenEnds.delete(id);
  }, 10_000).unref();
  loops = Array.from({ length: cfg.promptLoops }, (_, i) => promptLoop(i));
  enqueueLoop();
  timerLoop();
}

function takeWindow(): SoakWindow {
  const w = win;
  win = emptyWindow();
  return w;
}

process.on("message", (m: { type: string } & Partial<SoakLoadConfig>) => {
  if (m.type === "start") {
    start(m as SoakLoadConfig).then(
      () => process.send!({ type: "started" }),
      (err: unknown) => process.send!({ type: "error", message: String(err) }),
    );
  } else if (m.type === "sample") {
    process.send!({ type: "sample", ...takeWindow() });
  } else if (m.type === "stop") {
    running = false;
    const drained = Promise.race([
      Promise.all(loops),
      new Promise((r) => setTimeout(r, cfg.promptTimeoutMs + 1_000)),
    ]);
    void drained.then(() => {
      for (const s of streams) s.destroy();
      agent.destroy();
      process.send!({ type: "stopped", ...takeWindow() }, () => process.exit(0));
    });
  }
});
