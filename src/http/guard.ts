// The pre-routing guard: every request is checked before any route sees it. A browser tab
// on another site, a DNS-rebinding page, or another local user on the machine must not be
// able to drive the host, so the guard refuses, in this order (after a path or query with
// a NUL byte, which nothing legitimate sends):
//   1. a `Host` whose name is not one of ours (loopback names, the bound address, the
//      `--host` name, the advertised name; any port, since SSH tunnels change ports);
//   2. a cross-origin browser request (`Origin` that is not our own, or `Sec-Fetch-Site`
//      saying cross-site or same-site), except on webhook and callback routes, which prove
//      themselves, and a top-level navigation to a web console page (`/ui/…`, mode
//      `navigate`, destination `document`): a link from elsewhere may open the console,
//      never read or drive it (its pages forbid framing, its API stays behind this check);
//   3. a request body that is not JSON (415), so a form post or `text/plain` fetch never
//      reaches a JSON route (callback URLs excepted: they take any body);
//   4. over TCP, any request without the control token except the few that must reach the
//      host without one: the handshake (how a client learns what to send), public enqueue
//      and webhooks (public ingress: admitted as untrusted external evidence, and in the
//      token-required access modes they need the token too) and callback URLs (the URL is
//      the capability). Reads are not open: an agent's events, transcript and briefs carry
//      the operator's prompts and command output, and another user on the machine can reach
//      loopback TCP. The web console's static pages and its login exchange are open too
//      (they hold no data; the exchange proves itself with a one-time secret), and a console
//      session (cookie and CSRF token together, http/console-sessions.ts) counts as the
//      token. The Unix socket is guarded by its file modes instead (directory 0700, socket
//      0600).
// Every refusal is answered with a stable error kind and recorded as an audit event; nothing
// is admitted. The per-request auth state computed here is what the routes read.
import { networkInterfaces } from "node:os";
import { HolonError } from "../domain/errors.ts";
import { CSRF_HEADER, sessionCookiesOf } from "./console-sessions.ts";
import { bearerOf, isLoopback, tokenMatches, type AuthState } from "./support.ts";

/** `serve --access`: how far the TCP listener reaches and what it demands. */
export type AccessMode = "local" | "tunnel" | "lan" | "tailnet";
export const ACCESS_MODES: readonly AccessMode[] = ["local", "tunnel", "lan", "tailnet"];

export type Transport = "tcp" | "unix";

export type AccessPolicy = {
  access: AccessMode;
  /** The control token: configured, or generated at first start for local mode. */
  token: string;
  /** Host names (lower case, no port, no brackets) a request may name in `Host`. */
  allowedHosts: ReadonlySet<string>;
  /** Origin of `--advertise` (e.g. `https://lab.example:7878`), also accepted as our own. */
  advertiseOrigin: string | null;
  /** Checks a web console session's cookie(s) and CSRF token (http/console-sessions.ts). */
  consoleSession?: (
    cookies: string[],
    csrf: string | undefined,
  ) => { ok: true } | { ok: false; why: "none" | "bad_csrf" };
};

/** What the guard tells the audit log about one refusal. */
export type Refusal = {
  kind: string;
  status: number;
  method: string;
  path: string;
  transport: Transport;
  host: string | null;
  origin: string | null;
  peer: string | null;
  /** The agent the path names, if any (the audit event goes to it when it exists). */
  agent_hint: string | null;
};

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];

/** Routes that authenticate callers by their own token or signature, not by origin. */
function isMachineIngress(path: string): boolean {
  return path.startsWith("/webhooks/") || path.startsWith("/callbacks/");
}

/** Public ingress: the only routes besides the handshake and callbacks open without a token. */
function isPublicIngress(method: string, path: string): boolean {
  return (
    path.startsWith("/webhooks/") || (method === "POST" && /^\/agents\/[^/]+\/enqueue$/.test(path))
  );
}

/**
 * External trigger callbacks: the URL is the capability (no bearer token), and the body is
 * whatever the outside system sends (any content type, kept raw); the route checks the
 * capability, caps the size and rate-limits misses (http/routes-waiting.ts).
 */
function isCapabilityUrl(path: string): boolean {
  return path.startsWith("/callbacks/");
}

/** A callback path as the audit log may keep it: the token is a secret. */
function withoutCapability(path: string): string {
  return isCapabilityUrl(path) ? path.replace(/^(\/callbacks\/[^/]+\/).*$/, "$1<redacted>") : path;
}

/** The web console's pages and assets: static, no data, open to a top-level navigation. */
function isConsolePage(method: string, path: string): boolean {
  return (
    (method === "GET" || method === "HEAD") &&
    (path === "/ui" || path.startsWith("/ui/")) &&
    !path.startsWith("/ui/api/") &&
    path !== "/ui/session"
  );
}

/** The console's login exchange: the one-time secret in the body is the credential. */
function isConsoleLogin(method: string, path: string): boolean {
  return method === "POST" && path === "/ui/session";
}

/** Token-required access modes: every TCP surface needs the bearer token. */
export function tokenRequiredMode(access: AccessMode): boolean {
  return access !== "local";
}

export function isWildcard(address: string): boolean {
  return address === "0.0.0.0" || address === "::" || address === "[::]" || address === "";
}

export function isLoopbackName(name: string): boolean {
  const n = name.toLowerCase().replace(/^\[|\]$/g, "");
  return n === "localhost" || n === "::1" || /^127(\.\d{1,3}){3}$/.test(n);
}

/** The host names a request may use to reach a listener bound to `bindHost`. */
export function allowedHostNames(opts: {
  bindHost: string;
  boundAddress: string;
  advertiseHost: string | null;
}): Set<string> {
  const names = new Set(LOOPBACK_NAMES);
  const add = (n: string | null) => {
    if (n && !isWildcard(n)) names.add(n.toLowerCase().replace(/^\[|\]$/g, ""));
  };
  add(opts.bindHost);
  add(opts.boundAddress);
  add(opts.advertiseHost);
  if (isWildcard(opts.bindHost) || isWildcard(opts.boundAddress)) {
    // Bound to every interface: any of this machine's own addresses is a fair name for it.
    for (const list of Object.values(networkInterfaces())) {
      for (const i of list ?? []) add(i.address);
    }
  }
  return names;
}

/** `host[:port]` → lower-case host name without brackets; null when malformed. */
export function hostNameOf(header: string): string | null {
  const h = header.trim().toLowerCase();
  if (h === "") return null;
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    if (end < 0) return null;
    const rest = h.slice(end + 1);
    if (rest !== "" && !/^:\d{1,5}$/.test(rest)) return null;
    return h.slice(1, end);
  }
  const m = /^([^:/\s@]+)(?::(\d{1,5}))?$/.exec(h);
  return m ? m[1]! : null;
}

function isJsonType(contentType: string | null): boolean {
  if (!contentType) return false;
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

function hasBody(req: Request): boolean {
  const length = req.headers.get("content-length");
  if (length !== null) return Number(length) > 0;
  return req.headers.has("transfer-encoding");
}

function agentHintOf(path: string): string | null {
  const m =
    /^\/(?:control\/)?agents\/([^/]+)\//.exec(path) ?? /^\/webhooks\/[^/]+\/([^/]+)/.exec(path);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}

function cut(s: string | null, n = 200): string | null {
  return s === null ? null : s.length > n ? s.slice(0, n) + "…" : s;
}

export type GuardResult = { refused: HolonError; refusal: Refusal } | { auth: AuthState };

/**
 * Check one request. Returns the auth state to route with, or the refusal to answer with.
 * Pure apart from reading the machine's interface list (done once, when the policy is built).
 */
export function guardRequest(
  req: Request,
  transport: Transport,
  peer: string | undefined,
  policy: AccessPolicy,
): GuardResult {
  const url = new URL(req.url);
  const path = url.pathname;
  const hostHeader = req.headers.get("host");
  const origin = req.headers.get("origin");
  const local = transport === "unix" || isLoopback(peer);
  const presented = bearerOf(req.headers.get("authorization") ?? undefined);
  const bearerOk = tokenMatches(presented, policy.token);
  const cookies = sessionCookiesOf(req.headers.get("cookie"));
  const session =
    !bearerOk && cookies.length > 0 && policy.consoleSession
      ? policy.consoleSession(cookies, req.headers.get(CSRF_HEADER) ?? undefined)
      : null;
  const tokenOk = bearerOk || session?.ok === true;
  const auth: AuthState = {
    mode: tokenRequiredMode(policy.access) ? "bearer" : "local",
    access: policy.access,
    transport,
    local,
    token_ok: tokenOk,
    console_session: !bearerOk && session?.ok === true,
  };
  const refuse = (err: HolonError): GuardResult => ({
    refused: err,
    refusal: {
      kind: err.kind,
      status: err.status,
      method: req.method,
      path: cut(withoutCapability(path))!,
      transport,
      host: cut(hostHeader),
      origin: cut(origin),
      peer: peer ?? null,
      agent_hint: agentHintOf(path),
    },
  });

  // 0. A NUL byte in the path or query (ids name directories; nothing legitimate has one).
  if (/%00/.test(url.pathname + url.search) || (url.pathname + url.search).includes("\0")) {
    return refuse(
      new HolonError("nul_byte", "the request path contains a NUL byte", {
        hint: "ids and query values cannot contain NUL bytes",
      }),
    );
  }

  // 1. Host. Over the Unix socket a client may leave it out; over TCP it must name us.
  if (hostHeader !== null || transport === "tcp") {
    const name = hostHeader === null ? null : hostNameOf(hostHeader);
    if (name === null || !policy.allowedHosts.has(name)) {
      return refuse(
        new HolonError(
          "host_not_allowed",
          `requests must address this host by a loopback name or its own address, not '${cut(hostHeader ?? "", 100)}'`,
          {
            status: 403,
            hint: "use http://127.0.0.1:<port>; for remote access start serve with --advertise <url> (or --host <name>)",
          },
        ),
      );
    }
  }

  // 2. Browsers: an origin other than our own, or a fetch the browser itself calls cross-site.
  const navigation =
    isConsolePage(req.method, path) &&
    req.headers.get("sec-fetch-mode")?.toLowerCase() === "navigate" &&
    req.headers.get("sec-fetch-dest")?.toLowerCase() === "document";
  if (!isMachineIngress(path) && !navigation) {
    const site = req.headers.get("sec-fetch-site")?.toLowerCase();
    const own = (o: string) => {
      const lower = o.toLowerCase();
      return (
        (hostHeader !== null &&
          (lower === `http://${hostHeader.toLowerCase()}` ||
            lower === `https://${hostHeader.toLowerCase()}`)) ||
        (policy.advertiseOrigin !== null && lower === policy.advertiseOrigin.toLowerCase())
      );
    };
    if ((origin !== null && !own(origin)) || site === "cross-site" || site === "same-site") {
      return refuse(
        new HolonError(
          "origin_not_allowed",
          origin !== null
            ? `requests from the web origin '${cut(origin, 100)}' are not accepted`
            : "cross-site browser requests are not accepted",
          {
            status: 403,
            hint: "the control plane serves the CLI and local tools, not web pages",
          },
        ),
      );
    }
  }

  // 3. Bodies are JSON, declared as such.
  if (req.method !== "GET" && req.method !== "HEAD" && hasBody(req) && !isCapabilityUrl(path)) {
    const type = req.headers.get("content-type");
    if (!isJsonType(type)) {
      return refuse(
        new HolonError(
          "unsupported_media_type",
          `request bodies must be JSON (Content-Type: application/json), not '${cut(type ?? "none", 100)}'`,
          { status: 415, hint: "send the body as JSON with Content-Type: application/json" },
        ),
      );
    }
  }

  // 4. Tokens. The handshake stays open so a client can learn what to send.
  if (transport === "tcp" && path !== "/handshake" && !isCapabilityUrl(path)) {
    const control = path.startsWith("/control/");
    const open =
      (isPublicIngress(req.method, path) && auth.mode !== "bearer" && local) ||
      isConsolePage(req.method, path) ||
      isConsoleLogin(req.method, path);
    if (!open && !tokenOk && session?.ok === false && session.why === "bad_csrf") {
      return refuse(
        new HolonError(
          "csrf_token_invalid",
          "the console session's CSRF token is missing or does not match",
          {
            status: 403,
            hint: "reload the console page; if it persists, log in again with `holon console`",
          },
        ),
      );
    }
    if (!open && !tokenOk) {
      return refuse(
        new HolonError(
          "unauthorized",
          presented === undefined
            ? `a control token is required for ${control ? "control routes" : "this route"} over TCP`
            : "the control token does not match",
          {
            status: 401,
            hint:
              policy.access === "local"
                ? "send Authorization: Bearer <token>; the token is in <holon_home>/run/control-token (the CLI reads it for you)"
                : "send Authorization: Bearer <token> with the token the runtime was started with",
          },
        ),
      );
    }
  }
  return { auth };
}

/**
 * Refusals become audit events, but a page hammering the port must not fill the event log:
 * at most `perMinute` are recorded each minute, and the next recorded one says how many
 * were left out.
 */
export class RefusalAudit {
  private windowStart = 0;
  private inWindow = 0;
  private suppressed = 0;
  private readonly record: (refusal: Refusal, suppressed: number) => void;
  private readonly perMinute: number;
  private readonly now: () => number;

  constructor(
    record: (refusal: Refusal, suppressed: number) => void,
    perMinute = 30,
    now: () => number = Date.now,
  ) {
    this.record = record;
    this.perMinute = perMinute;
    this.now = now;
  }

  note(refusal: Refusal): void {
    const t = this.now();
    if (t - this.windowStart >= 60_000) {
      this.windowStart = t;
      this.inWindow = 0;
    }
    if (this.inWindow >= this.perMinute) {
      this.suppressed++;
      return;
    }
    this.inWindow++;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    try {
      this.record(refusal, suppressed);
    } catch {
      // auditing must never turn a refusal into a crash (e.g. during shutdown)
    }
  }
}
