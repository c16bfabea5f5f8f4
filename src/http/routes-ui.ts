// The web console: its static pages (built from src/web/ into dist/ui/ by
// scripts/build-ui.mjs), the login exchange, logout, and the few reads the console needs
// beyond the ordinary API (the agents overview in one request). Everything else the
// console shows comes from the same routes the CLI uses, with the console session as the
// credential (guard.ts, console-sessions.ts).
//
// Every /ui/ response carries the console's Content-Security-Policy (scripts from this
// origin only, no framing, no <base>), X-Frame-Options DENY and nosniff: even if an agent's
// transcript smuggled markup past React's escaping, it could run nothing and be framed by
// nobody.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Context, Hono } from "hono";
import { z } from "zod";
import { HolonError } from "../domain/errors.ts";
import { agentSummary } from "../host/inspect.ts";
import type { AppContext } from "./context.ts";
import type { RouteDoc } from "./route-doc.ts";
import { SESSION_COOKIE, sessionCookiesOf, type ConsoleSessions } from "./console-sessions.ts";
import {
  intParam,
  readJson,
  requireControl,
  requireRead,
  validate,
  type AppEnv,
} from "./support.ts";

export const CONSOLE_CSP =
  "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'";

const here = dirname(fileURLToPath(import.meta.url));

/** Where the built console lives: dist/ui beside dist/http in the package, or in a checkout. */
export function consoleBundleDir(): string {
  const packaged = join(here, "..", "ui");
  if (existsSync(join(packaged, "index.html"))) return packaged;
  return join(here, "..", "..", "dist", "ui");
}

let building: Promise<void> | null = null;
/**
 * A checkout (src/web/ beside us) that has not built the console yet builds it on first
 * use; an installed package ships it built.
 */
async function ensureBundle(): Promise<string> {
  const dir = consoleBundleDir();
  if (existsSync(join(dir, "index.html"))) return dir;
  const script = join(here, "..", "..", "scripts", "build-ui.mjs");
  if (!existsSync(join(here, "..", "web", "main.tsx")) || !existsSync(script)) {
    throw new HolonError("console_not_built", "the web console is not part of this build", {
      status: 404,
      hint: "build it with `npm run build:ui` in the checkout",
    });
  }
  building ??= (async () => {
    const mod = (await import(pathToFileURL(script).href)) as {
      buildUi: (o: { outDir: string }) => Promise<unknown>;
    };
    await mod.buildUi({ outDir: dir });
  })().finally(() => (building = null));
  await building;
  return dir;
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".png": "image/png",
  ".svg": "image/svg+xml",
};

export const LoginBody = z.strictObject({
  secret: z.string().min(1).max(200),
  /** Also answer with the agents overview: the first screen from the login's own request. */
  overview: z.boolean().optional(),
});

const SessionResponse = z.object({
  ok: z.literal(true),
  via: z.enum(["console_session", "token", "local_socket"]),
  expires_at: z.string().nullable(),
});
const LogoutResponse = z.object({ ok: z.literal(true), ended: z.boolean() });
const LoginLinkResponse = z.object({
  ok: z.literal(true),
  url: z.string(),
  path: z.string(),
  expires_at: z.string(),
});
const OverviewAgent = z.looseObject({
  agent_id: z.string(),
  status: z.string(),
  visibility: z.string(),
  cost_today_usd: z.number().nullable(),
  tokens_today: z.number().int(),
});
const OverviewResponse = z.object({
  ok: z.literal(true),
  cursor: z.number().int(),
  now: z.string(),
  default_agent: z.string(),
  asks_pending: z.number().int(),
  agents: z.array(OverviewAgent),
});
const LoginResponse = z.object({
  ok: z.literal(true),
  csrf_token: z.string(),
  expires_at: z.string(),
  overview: OverviewResponse.optional(),
});

/** The longest an overview request waits for a change. */
const MAX_WAIT_MS = 25_000;

export function uiRoutes(
  app: Hono<AppEnv>,
  { host, opts }: AppContext,
  sessions: ConsoleSessions,
): void {
  app.use("/ui/*", async (c, next) => {
    await next();
    c.header("Content-Security-Policy", CONSOLE_CSP);
    c.header("X-Frame-Options", "DENY");
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "no-referrer");
    c.header("Cross-Origin-Opener-Policy", "same-origin");
    c.header("Cross-Origin-Resource-Policy", "same-origin");
    if (!c.res.headers.has("cache-control")) c.header("Cache-Control", "no-store");
  });
  app.use("/ui", async (c, next) => {
    await next();
    c.header("Content-Security-Policy", CONSOLE_CSP);
    c.header("X-Frame-Options", "DENY");
  });

  const file = async (c: Context<AppEnv>, name: string) => {
    const dir = await ensureBundle();
    const ext = /\.[a-z]+$/.exec(name)?.[0] ?? "";
    const type = TYPES[ext];
    const path = join(dir, name);
    if (!type || !existsSync(path)) {
      throw new HolonError("not_found", `no console file '${name}'`, { status: 404 });
    }
    return c.body(readFileSync(path), 200, { "content-type": type });
  };

  app.get("/ui", (c) => c.redirect("/ui/", 302));
  app.get("/ui/", (c) => file(c, "index.html"));
  app.get("/ui/assets/:name", (c) => {
    const name = c.req.param("name");
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(name) || name.startsWith(".")) {
      throw new HolonError("not_found", "no such console file", { status: 404 });
    }
    return file(c, join("assets", name));
  });

  // The login exchange. Open (the guard lets it through without a token): the one-time
  // secret is the credential, and Origin/Sec-Fetch checks already refused other sites.
  app.post("/ui/session", async (c) => {
    const body = validate(LoginBody, await readJson(c));
    const opened = sessions.redeem(body.secret);
    const maxAge = Math.max(
      1,
      Math.floor((Date.parse(opened.expires_at) - host.store.clock.now().getTime()) / 1000),
    );
    const secure = new URL(c.req.url).protocol === "https:" ? "; Secure" : "";
    c.header(
      "Set-Cookie",
      `${SESSION_COOKIE}=${opened.session_id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure}`,
    );
    return c.json({
      ok: true,
      csrf_token: opened.csrf_token,
      expires_at: opened.expires_at,
      ...(body.overview ? { overview: await overview() } : {}),
    });
  });

  app.get("/ui/session", (c) => {
    requireRead(c);
    const auth = c.get("auth");
    let expires: string | null = null;
    if (auth.console_session) {
      const s = sessions.check(
        sessionCookiesOf(c.req.header("cookie")),
        c.req.header("x-holon-csrf"),
      );
      if (s.ok) expires = s.expires_at;
    }
    return c.json({
      ok: true,
      via: auth.console_session
        ? "console_session"
        : auth.transport === "unix"
          ? "local_socket"
          : "token",
      expires_at: expires,
    });
  });

  app.post("/ui/session/logout", (c) => {
    requireRead(c);
    let ended = false;
    if (c.get("auth").console_session) {
      const s = sessions.check(
        sessionCookiesOf(c.req.header("cookie")),
        c.req.header("x-holon-csrf"),
      );
      if (s.ok) ended = sessions.end(s.session_id);
    }
    c.header("Set-Cookie", `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    return c.json({ ok: true, ended });
  });

  // `holon console`: a login link for the operator (control route: only the token's holder,
  // or the local user over the socket, may mint one).
  app.post("/control/console/login-link", (c) => {
    requireControl(c);
    const minted = sessions.mintLink();
    const base =
      opts.advertiseUrl ?? (opts.listen?.http_addr ? `http://${opts.listen.http_addr}` : null);
    if (base === null) {
      throw new HolonError("console_unavailable", "this host does not listen on TCP", {
        status: 409,
        hint: "start `holon serve` (it listens on 127.0.0.1 by default)",
      });
    }
    const path = `/ui/#login=${minted.secret}`;
    return c.json({
      ok: true,
      url: `${base.replace(/\/$/, "")}${path}`,
      path,
      expires_at: minted.expires_at,
    });
  });

  // The agents page in one request: every agent (children included) with what it waits
  // for, its current work item and what it cost today. `after=<cursor>` holds the request
  // until something happened (or `wait_ms` passed): the page stays live without a stream
  // per agent.
  let cursor = 0;
  const waiters = new Set<() => void>();
  // Lives as long as the store: one counter and a set of waiting requests.
  host.store.onEvents(() => {
    cursor++;
    for (const w of [...waiters]) w();
  });

  /** The agents page's data: every agent with its wait, work item and today's cost. */
  const overview = async () => {
    const now = host.store.clock.now();
    const dayStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
    const records = (await host.store.agents.list()).filter((a) => !a.archived_at);
    const usage = await host.services.usage.report(
      records.map((a) => a.agent_id),
      dayStart,
      new Date(now.getTime() + 1),
    );
    const summaries = await Promise.all(records.map((a) => agentSummary(host, a)));
    const agents = records.map((a, i) => {
      const s = summaries[i] as Record<string, unknown>;
      const u = usage.by_agent[a.agent_id];
      return {
        agent_id: a.agent_id,
        status: a.status,
        visibility: a.visibility,
        kind: a.kind,
        is_default: s.is_default,
        lifecycle_hint: s.lifecycle_hint,
        pending: s.pending,
        current_run_id: s.current_run_id,
        sleeping_until: s.sleeping_until,
        waiting: s.waiting,
        closure: s.closure,
        current_work_item: s.current_work_item,
        active_task_ids: s.active_task_ids,
        lineage_parent_agent_id: a.lineage_parent_agent_id ?? null,
        supervisor_agent_id: a.supervisor_agent_id ?? null,
        model: s.model,
        last_failure: s.last_failure,
        updated_at: a.updated_at,
        cost_today_usd: u ? u.cost_usd : 0,
        tokens_today: u ? u.input_tokens + u.output_tokens : 0,
      };
    });
    return {
      ok: true,
      cursor,
      now: now.toISOString(),
      default_agent: host.defaultAgentId,
      asks_pending: (await host.services.asks.list({ state: "pending", limit: 500 })).length,
      agents,
    };
  };

  app.get("/ui/api/overview", async (c) => {
    requireRead(c);
    const after = intParam(c, "after", { min: 0 });
    const waitMs = intParam(c, "wait_ms", { min: 0, max: MAX_WAIT_MS }) ?? 0;
    if (after !== undefined && after === cursor && waitMs > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          waiters.delete(done);
          c.req.raw.signal.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        waiters.add(done);
        c.req.raw.signal.addEventListener("abort", done, { once: true });
      });
    }
    return c.json(await overview());
  });
}

const Html = z.string();

export const UI_ROUTE_DOCS: RouteDoc[] = [
  {
    method: "get",
    path: "/ui",
    summary: "The web console (redirects to /ui/)",
    access: "none",
    ok: { status: 302, schema: Html, contentType: "text/html", description: "redirect" },
  },
  {
    method: "get",
    path: "/ui/",
    summary: "The web console's page (open: it holds no data; the session is the credential)",
    access: "none",
    ok: { status: 200, schema: Html, contentType: "text/html" },
  },
  {
    method: "get",
    path: "/ui/assets/:name",
    summary: "The web console's script and style sheet",
    access: "none",
    ok: { status: 200, schema: Html, contentType: "text/javascript" },
  },
  {
    method: "post",
    path: "/ui/session",
    summary: "Exchange a one-time login secret for a console session (cookie + CSRF token)",
    access: "none",
    body: { schema: LoginBody },
    ok: { status: 200, schema: LoginResponse },
  },
  {
    method: "get",
    path: "/ui/session",
    summary: "Which credential this request carries, and when a console session ends",
    access: "read",
    ok: { status: 200, schema: SessionResponse },
  },
  {
    method: "post",
    path: "/ui/session/logout",
    summary: "End this console session and clear its cookie",
    access: "read",
    ok: { status: 200, schema: LogoutResponse },
  },
  {
    method: "post",
    path: "/control/console/login-link",
    summary: "Mint a one-time console login link, valid for 60 seconds (`holon console`)",
    access: "control",
    ok: { status: 200, schema: LoginLinkResponse },
  },
  {
    method: "get",
    path: "/ui/api/overview",
    summary: "Every agent with status, wait, work item and today's cost, in one request",
    access: "read",
    query: [
      {
        name: "after",
        schema: z.number().int().min(0),
        description: "the cursor of the last answer: wait for a change",
      },
      {
        name: "wait_ms",
        schema: z.number().int().min(0).max(MAX_WAIT_MS),
        description: "how long to wait for a change (default 0)",
      },
    ],
    ok: { status: 200, schema: OverviewResponse },
  },
];
