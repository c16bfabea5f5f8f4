// The web console: a React page served by the host at /ui/ (routes-ui.ts). It is a client of
// the same HTTP API as the CLI, with a console session as its credential (api.ts). It may
// import the domain's types and the presentation layer (src/client/presentation.ts, the one
// the TUI and `tail` render from) and nothing of the server. Routing is by the URL fragment
// (`#/agent/main`), so the host serves one page; the login link's secret also arrives in
// the fragment (`#login=…`), which browsers never send to a server or put in a Referer.
//
// Everything an agent wrote is shown as text (React escapes it; nothing is ever set as
// HTML or turned into a link), cut to a bounded length per row, in virtualised lists.
import {
  StrictMode,
  Suspense,
  lazy,
  useCallback,
  useEffect,
  useMemo,
  useRef,
  useState,
} from "react";
import { flushSync } from "react-dom";
import { createRoot } from "react-dom/client";
import { bootAuthOk, takeBootAuth } from "./boot.ts";
import { ApiError, get, login, logout, onSessionLost } from "./api.ts";
import { AgentsPage } from "./agents.tsx";
import { ErrorLine } from "./parts.tsx";

// Every page but the agents list is its own chunk, fetched when first opened, so the first
// screen evaluates only its own code. The conversation page carries the presentation layer
// and the event catalog, by far the largest part.
const AgentPage = lazy(() => import("./agent.tsx").then((m) => ({ default: m.AgentPage })));
const AsksPage = lazy(() => import("./asks.tsx").then((m) => ({ default: m.AsksPage })));
const UsagePage = lazy(() => import("./usage.tsx").then((m) => ({ default: m.UsagePage })));

const SESSION_ENDED =
  "Your console session has ended: it expired, you logged out elsewhere, or the host restarted without keeping console sessions.";

type Route =
  | { page: "agents" }
  | { page: "agent"; id: string; tab: string }
  | { page: "asks" }
  | { page: "usage" };

function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "agent" && parts[1])
    return { page: "agent", id: parts[1], tab: parts[2] ?? "conversation" };
  if (parts[0] === "asks") return { page: "asks" };
  if (parts[0] === "usage") return { page: "usage" };
  return { page: "agents" };
}

/** `ended`: the session was in and the host stopped accepting it. */
type AuthState = "checking" | "in" | "out" | "ended" | { error: string };

function App() {
  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  // Usually the boot script's session check has come back while this script loaded: then
  // the first render is already the page, not "Connecting…".
  const [auth, setAuth] = useState<AuthState>(() => (bootAuthOk() ? "in" : "checking"));
  const started = useRef(false);

  useEffect(() => {
    // A login link may also arrive in a tab already open on the console (pasted into the
    // address bar: only the fragment changes, the page does not load again).
    const enter = async () => {
      // The first check was started by boot.ts before this script ran (it also took the
      // login secret out of the address bar).
      const boot = takeBootAuth();
      const m = boot ? null : /^#login=([A-Za-z0-9_-]+)$/.exec(location.hash);
      // The secret leaves the address bar (and history) before anything else happens.
      if (m) history.replaceState(null, "", `${location.pathname}#/`);
      try {
        if (boot) await boot;
        else if (m) {
          setAuth("checking");
          await login(m[1]!);
        } else await get("/ui/session");
        setAuth("in");
      } catch (err) {
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
          setAuth(err.kind === "login_link_invalid" ? { error: err.message } : "out");
        } else setAuth({ error: err instanceof Error ? err.message : String(err) });
      }
      setRoute(parseRoute(location.hash));
    };
    const onHash = () => {
      if (location.hash.startsWith("#login=")) void enter();
      else setRoute(parseRoute(location.hash));
    };
    addEventListener("hashchange", onHash);
    if (!started.current) {
      started.current = true;
      void enter();
    }
    return () => removeEventListener("hashchange", onHash);
  }, []);

  const onAuthLost = useCallback(() => setAuth((a) => (a === "in" ? "ended" : a)), []);
  useEffect(() => onSessionLost(onAuthLost), [onAuthLost]);

  if (auth === "checking")
    return (
      <main className="center" aria-busy="true">
        <p>Connecting…</p>
      </main>
    );
  if (auth !== "in") {
    return (
      <main className="center">
        <h1>Holon console</h1>
        {typeof auth === "object" ? (
          <ErrorLine error={auth.error} />
        ) : auth === "ended" ? (
          <ErrorLine testId="session-ended" error={SESSION_ENDED} />
        ) : null}
        <p>
          You are not logged in. Run <code>holon console</code> on the machine that runs the host:
          it opens this page with a one-time login link (valid for 60 seconds).
        </p>
      </main>
    );
  }
  return (
    <>
      <header className="top">
        <span className="brand">Holon</span>
        <nav aria-label="Main">
          <a
            href="#/"
            aria-current={route.page === "agents" || route.page === "agent" ? "page" : undefined}
          >
            Agents
          </a>
          <a href="#/asks" aria-current={route.page === "asks" ? "page" : undefined}>
            Asks
          </a>
          <a href="#/usage" aria-current={route.page === "usage" ? "page" : undefined}>
            Usage
          </a>
        </nav>
        <button
          type="button"
          className="quiet"
          onClick={async () => {
            await logout().catch(() => {});
            setAuth("out");
          }}
        >
          Log out
        </button>
      </header>
      <main id="main">
        <Page route={route} onAuthLost={onAuthLost} />
      </main>
    </>
  );
}

function Page({ route, onAuthLost }: { route: Route; onAuthLost: () => void }) {
  const key = useMemo(() => JSON.stringify(route), [route]);
  switch (route.page) {
    case "agents":
      return <AgentsPage onAuthLost={onAuthLost} />;
    case "agent":
      return (
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <AgentPage key={route.id} id={route.id} tab={route.tab} onAuthLost={onAuthLost} />
        </Suspense>
      );
    case "asks":
      return (
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <AsksPage key={key} />
        </Suspense>
      );
    case "usage":
      return (
        <Suspense fallback={<p aria-busy="true">Loading…</p>}>
          <UsagePage />
        </Suspense>
      );
  }
}

// The first render happens now, not in a later task: when the boot script's answers are in,
// the agents list is on the page as soon as this script has run.
const root = createRoot(document.getElementById("root")!);
flushSync(() =>
  root.render(
    <StrictMode>
      <App />
    </StrictMode>,
  ),
);
