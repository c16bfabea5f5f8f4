// The console's side of the HTTP API: every request is same-origin and carries the session's
// CSRF token (kept in this origin's localStorage; the HttpOnly cookie rides along by
// itself). Event streams are read with fetch, not EventSource, so they carry the token too,
// and resume from the last event seq they saw after a drop.
const CSRF_KEY = "holon.console.csrf";

export class ApiError extends Error {
  readonly status: number;
  readonly kind: string;
  constructor(status: number, kind: string, message: string) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

export function csrfToken(): string | null {
  try {
    return localStorage.getItem(CSRF_KEY);
  } catch {
    return null;
  }
}

function setCsrf(token: string | null): void {
  if (token === null) localStorage.removeItem(CSRF_KEY);
  else localStorage.setItem(CSRF_KEY, token);
}

function headers(json: boolean): Record<string, string> {
  const h: Record<string, string> = { accept: "application/json" };
  const t = csrfToken();
  if (t) h["x-holon-csrf"] = t;
  if (json) h["content-type"] = "application/json";
  return h;
}

/**
 * Called when the host stops accepting this browser's session (it expired, was logged out
 * elsewhere, or the host restarted without keeping sessions): the page then says so and
 * how to log in again, instead of retrying for ever.
 */
const authLostListeners = new Set<() => void>();
export function onSessionLost(f: () => void): () => void {
  authLostListeners.add(f);
  return () => {
    authLostListeners.delete(f);
  };
}

function sessionLost(status: number, kind: string): boolean {
  return status === 401 || (status === 403 && kind === "csrf_token_invalid");
}

async function parse<T>(res: Response): Promise<T> {
  const body = (await res.json().catch(() => null)) as {
    ok?: boolean;
    error?: { kind?: string; message?: string };
  } | null;
  if (!res.ok || !body || body.ok === false) {
    const kind = body?.error?.kind ?? "http_error";
    if (sessionLost(res.status, kind) && kind !== "login_link_invalid") {
      for (const f of [...authLostListeners]) f();
    }
    throw new ApiError(res.status, kind, body?.error?.message ?? `HTTP ${res.status}`);
  }
  return body as T;
}

export async function get<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, {
    headers: headers(false),
    credentials: "same-origin",
    ...(signal ? { signal } : {}),
  });
  return parse<T>(res);
}

export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    headers: headers(true),
    credentials: "same-origin",
    body: JSON.stringify(body),
  });
  return parse<T>(res);
}

/**
 * Spend the one-time secret from the login link. With `overview`, the answer also carries
 * the agents overview (the first screen, from this one request).
 */
export async function login(secret: string, overview = false): Promise<unknown> {
  const res = await fetch("/ui/session", {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    credentials: "same-origin",
    body: JSON.stringify(overview ? { secret, overview } : { secret }),
  });
  const r = await parse<{ csrf_token: string; overview?: unknown }>(res);
  setCsrf(r.csrf_token);
  return r.overview;
}

export async function logout(): Promise<void> {
  try {
    await post("/ui/session/logout");
  } finally {
    setCsrf(null);
  }
}

export type StreamEvent = { seq: number; type: string; data: string };

/**
 * Follow an SSE route until `signal` aborts: frames go to `onEvent`; after a drop the
 * stream reconnects with `Last-Event-ID` (no gap, no duplicate), also across a restart of
 * the host. `onState` says whether the stream is live. A refused session ends it (the
 * ApiError is thrown): retrying would only be refused again.
 */
export async function follow(
  path: string,
  afterSeq: number,
  onEvent: (e: StreamEvent) => void,
  onState: (live: boolean, error?: string) => void,
  signal: AbortSignal,
): Promise<void> {
  let last = afterSeq;
  let backoff = 250;
  while (!signal.aborted) {
    try {
      const res = await fetch(path, {
        headers: { ...headers(false), accept: "text/event-stream", "last-event-id": String(last) },
        credentials: "same-origin",
        signal,
      });
      if (!res.ok || !res.body) {
        const err = await parse(res).catch((e: unknown) => e);
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
          // No retry: the session is gone (the page shows the login-needed state).
          onState(false, err.message);
          throw err;
        }
        throw err instanceof Error ? err : new Error(`HTTP ${res.status}`);
      }
      onState(true);
      backoff = 250;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += value;
        let cut: number;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const frame = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          let id: number | null = null;
          let type = "message";
          const data: string[] = [];
          for (const line of frame.split("\n")) {
            if (line.startsWith("id: ")) id = Number(line.slice(4));
            else if (line.startsWith("event: ")) type = line.slice(7);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (id !== null && Number.isFinite(id)) {
            last = id;
            onEvent({ seq: id, type, data: data.join("\n") });
          }
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) throw err;
      // A dropped connection or a host that is restarting: say so, and try again.
      onState(
        false,
        err instanceof TypeError
          ? "the host is unreachable; reconnecting…"
          : err instanceof Error
            ? err.message
            : String(err),
      );
    }
    if (signal.aborted) return;
    onState(false);
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 2_000);
  }
}
