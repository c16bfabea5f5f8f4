// SSE subscribers for the fan-out benchmark, forked so parsing never shares the host's
// event loop. Each subscriber is its own TCP connection to GET <path>. Frames are parsed
// by hand (id line, event line, the envelope's "ts") to keep per-event cost small.
//
// IPC protocol:
//   parent → { type: "open", hostname, port, path, subscribers, token }
//   worker → { type: "ready", connected }
//   parent → { type: "finish", fromSeq, toSeq, timeoutMs }   (expect (fromSeq, toSeq])
//   worker → { type: "result", ...SubscribersResult }
import { request, type ClientRequest } from "node:http";
import { summarize, type Summary } from "../lib/stats.ts";

type OpenMsg = {
  type: "open";
  hostname: string;
  port: number;
  path: string;
  subscribers: number;
  /** The host's control token: the event stream over TCP needs it. */
  token: string | null;
};
type FinishMsg = { type: "finish"; fromSeq: number; toSeq: number; timeoutMs: number };

export type SubscribersResult = {
  subscribers: number;
  complete: number;
  /** Events expected per subscriber that never arrived, summed over subscribers. */
  missing: number;
  duplicates: number;
  /** Places where a subscriber's id sequence jumped forward past a missing id. */
  gaps: number;
  overflowed: number;
  closedEarly: number;
  framesReceived: number;
  /** ms from the "finish" message until every subscriber had the last event. */
  drainMs: number;
  /** Delivery latency (receive time − event ts), ms, over all message_admitted frames. */
  latency: Summary;
  firstProblem: string | null;
};

type Sub = {
  req: ClientRequest;
  connected: boolean;
  closed: boolean;
  overflowed: boolean;
  first: number;
  last: number;
  unique: number;
  duplicates: number;
  gaps: number;
  error: string | null;
};

const subs: Sub[] = [];
const latencies: number[] = [];
let framesReceived = 0;
let onProgress: (() => void) | undefined;

function handleFrame(sub: Sub, frame: string, now: number): void {
  if (frame.startsWith(":")) {
    if (frame.startsWith(": connected")) sub.connected = true;
    return;
  }
  if (frame.startsWith("event: stream_overflow")) {
    sub.overflowed = true;
    return;
  }
  if (!frame.startsWith("id: ")) return;
  framesReceived++;
  const nl = frame.indexOf("\n");
  const seq = Number(frame.slice(4, nl));
  if (seq <= sub.last) {
    sub.duplicates++;
    return;
  }
  if (sub.last >= 0 && seq !== sub.last + 1) sub.gaps++;
  if (sub.first < 0) sub.first = seq;
  sub.last = seq;
  sub.unique++;
  if (frame.startsWith("event: message_admitted", nl + 1)) {
    const at = frame.indexOf('"ts":"');
    if (at >= 0) latencies.push(now - Date.parse(frame.slice(at + 6, frame.indexOf('"', at + 6))));
  }
}

function open(msg: OpenMsg): void {
  for (let i = 0; i < msg.subscribers; i++) {
    const sub: Sub = {
      req: undefined as unknown as ClientRequest,
      connected: false,
      closed: false,
      overflowed: false,
      first: -1,
      last: -1,
      unique: 0,
      duplicates: 0,
      gaps: 0,
      error: null,
    };
    sub.req = request(
      {
        hostname: msg.hostname,
        port: msg.port,
        path: msg.path,
        agent: false,
        headers: {
          accept: "text/event-stream",
          ...(msg.token ? { authorization: `Bearer ${msg.token}` } : {}),
        },
      },
      (res) => {
        if (res.statusCode !== 200) sub.error = `HTTP ${res.statusCode}`;
        res.setEncoding("utf8");
        let buf = "";
        res.on("data", (chunk: string) => {
          const now = Date.now();
          buf += chunk;
          let pos = 0;
          for (;;) {
            const end = buf.indexOf("\n\n", pos);
            if (end < 0) break;
            handleFrame(sub, buf.slice(pos, end), now);
            pos = end + 2;
          }
          buf = pos === buf.length ? "" : buf.slice(pos);
          onProgress?.();
        });
        res.on("end", () => {
          sub.closed = true;
          onProgress?.();
        });
      },
    );
    sub.req.on("error", (err) => {
      sub.error ??= err.message;
      sub.closed = true;
      onProgress?.();
    });
    sub.req.end();
    subs.push(sub);
  }
}

async function waitFor(cond: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.min(left, 100));
      onProgress = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    onProgress = undefined;
  }
  return true;
}

async function finish(msg: FinishMsg): Promise<SubscribersResult> {
  const t0 = Date.now();
  await waitFor(() => subs.every((s) => s.last >= msg.toSeq || s.closed), msg.timeoutMs);
  const drainMs = Date.now() - t0;
  const expected = msg.toSeq - msg.fromSeq;
  let firstProblem: string | null = null;
  let complete = 0;
  let missing = 0;
  subs.forEach((s, i) => {
    const ok =
      s.first === msg.fromSeq + 1 &&
      s.last === msg.toSeq &&
      s.unique === expected &&
      s.duplicates === 0 &&
      s.gaps === 0;
    if (ok) complete++;
    else
      firstProblem ??= `subscriber ${i}: first=${s.first} last=${s.last} unique=${s.unique} dup=${s.duplicates} gaps=${s.gaps} overflow=${s.overflowed} closed=${s.closed} error=${s.error}`;
    missing += Math.max(0, expected - s.unique);
  });
  for (const s of subs) s.req.destroy();
  return {
    subscribers: subs.length,
    complete,
    missing,
    duplicates: subs.reduce((n, s) => n + s.duplicates, 0),
    gaps: subs.reduce((n, s) => n + s.gaps, 0),
    overflowed: subs.filter((s) => s.overflowed).length,
    closedEarly: subs.filter((s) => s.closed && s.last < msg.toSeq).length,
    framesReceived,
    drainMs,
    latency: summarize(latencies),
    firstProblem,
  };
}

process.on("message", (msg: OpenMsg | FinishMsg) => {
  const fail = (err: unknown) =>
    process.send!({ type: "error", message: String((err as Error)?.stack ?? err) });
  if (msg.type === "open") {
    open(msg);
    waitFor(() => subs.every((s) => s.connected || s.closed), 20_000).then(
      () => process.send!({ type: "ready", connected: subs.filter((s) => s.connected).length }),
      fail,
    );
  } else if (msg.type === "finish") {
    finish(msg).then(
      (result) => process.send!({ type: "result", ...result }, () => process.exit(0)),
      fail,
    );
  }
});
