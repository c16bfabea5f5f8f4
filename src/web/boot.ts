// The first script the console runs, before React is even evaluated (index.html loads it
// ahead of the page's script, which the browser fetches meanwhile from its modulepreload
// links). It takes a login link's secret out of the address bar at once, spends it, and asks
// for the agents overview when that is the page to show: those round trips then overlap the
// loading and evaluation of the rest of the console instead of following them. The page
// (main.tsx, agents.tsx) picks up what was started here. It imports nothing but api.ts.
import { get, login } from "./api.ts";

const secret = /^#login=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
// The secret leaves the address bar (and history) before anything else happens.
if (secret) history.replaceState(null, "", `${location.pathname}#/`);

/** A request started here: its promise, and its answer once it came (readable at once). */
type Early<T> = { promise: Promise<T>; ok: boolean; failed: boolean; value?: T };
function early<T>(promise: Promise<T>): Early<T> {
  const e: Early<T> = { promise, ok: false, failed: false };
  // A failure is the page's to show when it takes the promise; here it is only noted.
  promise.then(
    (v) => {
      e.ok = true;
      e.value = v;
    },
    () => {
      e.failed = true;
    },
  );
  return e;
}

// On the agents page, one request brings the session and the first screen: the login
// exchange answers with the overview too, and without a link the overview itself tells
// whether the session stands (401 when not).
const agentsPage = /^#?\/?$/.test(location.hash);
const first: Promise<unknown> = secret
  ? login(secret, agentsPage)
  : get(agentsPage ? "/ui/api/overview" : "/ui/session");

/** The session check (or the login exchange) the page starts with. */
const auth = early(first.then(() => {}));
let overview: Early<unknown> | null = agentsPage ? early(first) : null;

/** Whether the session is already known good (the page then starts logged in). */
export function bootAuthOk(): boolean {
  return auth.ok;
}

let authTaken = false;
/** The first session check, once; later ones (a link pasted into an open tab) start anew. */
export function takeBootAuth(): Promise<void> | null {
  if (authTaken) return null;
  authTaken = true;
  return auth.promise;
}

/**
 * The agents overview asked for at boot, once (for the agents page's first request): the
 * answer itself when it already came, so the first render draws the list, else the promise.
 */
export function takeBootOverview<T>(): { value: T } | { promise: Promise<T> } | null {
  const o = overview as Early<T> | null;
  overview = null;
  // Failed with the session check (a used link): a later login asks anew.
  if (!o || o.failed) return null;
  return o.ok ? { value: o.value as T } : { promise: o.promise };
}
