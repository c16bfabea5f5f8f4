// How the provider SDK clients are made: the options every client gets, one client per
// candidate, and the fetch they all send through (node:http(s) with keep-alive agents, so
// connections are pooled here whatever client sends).
//
// The SDKs accept any fetch; Node's built-in one (undici over web streams) costs a few hundred
// microseconds more per request than node:http, which an agent pays on every model round.
// Requests this does not handle (a body other than a string or bytes) go to the global fetch.
// Abort works through the request's signal; network errors surface as the SDK's connection
// errors, as with the built-in fetch.
//
// Proxies: HTTPS_PROXY / HTTP_PROXY (lower-case names first, as curl reads them) and NO_PROXY
// are read per request. A proxied request goes through a CONNECT tunnel (for http:// targets
// too, as undici does), over keep-alive agents kept per proxy; `user:pass@` in the proxy URL
// becomes Proxy-Authorization.
//
// Activity: every chunk of a response body (and the response head) is reported to the
// attempt that sent it (`withActivity`), so the retry loop can time out a stream that went
// quiet instead of one that is merely long.
import { AsyncLocalStorage } from "node:async_hooks";
import type { Agent as HttpAgentType, AgentOptions } from "node:http";
import { isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { LiteHeaders, LiteResponse } from "./lite-web.ts";
import type { ModelCandidate } from "./types.ts";

// Taken with getBuiltinModule, not a static ESM import: Node builds the ESM view of node:http
// by reading every export, and its lazy ones load undici (tens of milliseconds at start-up
// that `holon run` spent before its first provider request).
const { Agent: HttpAgent, request: httpRequest } = process.getBuiltinModule("node:http");
// node:https and node:tls (some 50 builtin modules, 10-15 ms) load at the first https:// URL:
// a provider on plain http (a local model server, the test's fake) never needs them.
const https = () => process.getBuiltinModule("node:https");

/** The SDKs' own timeout, far beyond any of Holon's (a 10-minute reasoning stream is fine). */
const SDK_TIMEOUT_MS = 6 * 60 * 60_000;

const activity = new AsyncLocalStorage<() => void>();

/** Runs `fn` with `touch` called on every response head and body chunk its requests receive. */
export function withActivity<T>(touch: () => void, fn: () => Promise<T>): Promise<T> {
  return activity.run(touch, fn);
}

/**
 * Options every SDK client gets: no SDK retries and no SDK timeout (Holon's retry loop does
 * both: an idle timeout for streams, a total one for `stream: false`), no logging.
 */
export function sdkOptions(candidate: ModelCandidate) {
  return {
    baseURL: candidate.base_url,
    maxRetries: 0,
    timeout: SDK_TIMEOUT_MS,
    logLevel: "off" as const,
    fetch: providerFetch,
  };
}

/** Memoize a client builder per candidate object (a turn reuses its candidates every round). */
export function perCandidate<T extends object>(build: (c: ModelCandidate) => T) {
  const made = new WeakMap<ModelCandidate, T>();
  return (candidate: ModelCandidate): T => {
    let client = made.get(candidate);
    if (client === undefined) {
      client = build(candidate);
      made.set(candidate, client);
    }
    return client;
  };
}

const httpAgent = new HttpAgent({ keepAlive: true });
let httpsAgent: HttpAgentType | undefined;
const direct = (protocol: "http:" | "https:"): HttpAgentType =>
  protocol === "http:" ? httpAgent : (httpsAgent ??= new (https().Agent)({ keepAlive: true }));

type Env = Record<string, string | undefined>;

/** The proxy URL for a request to `url` under `env`, or null for a direct connection. */
export function proxyFor(url: URL, env: Env = process.env): URL | null {
  const raw =
    url.protocol === "https:"
      ? (env.https_proxy ?? env.HTTPS_PROXY ?? env.all_proxy ?? env.ALL_PROXY)
      : (env.http_proxy ?? env.HTTP_PROXY ?? env.all_proxy ?? env.ALL_PROXY);
  if (!raw || !raw.trim()) return null;
  if (bypassesProxy(url, env.no_proxy ?? env.NO_PROXY ?? "")) return null;
  try {
    const proxy = new URL(raw.includes("://") ? raw : `http://${raw}`);
    return proxy.protocol === "http:" || proxy.protocol === "https:" ? proxy : null;
  } catch {
    return null;
  }
}

/**
 * NO_PROXY: comma- or space-separated entries; `*` matches everything; `host`, `.host` and
 * `*.host` match the host and its subdomains; an entry may carry `:port`; IP literals match
 * exactly.
 */
export function bypassesProxy(url: URL, noProxy: string): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  for (let entry of noProxy.split(/[\s,]+/)) {
    entry = entry.trim().toLowerCase();
    if (!entry) continue;
    if (entry === "*") return true;
    let entryPort: string | undefined;
    const m = /^(.*?)(?::(\d+))?$/.exec(entry.startsWith("[") ? entry.slice(1) : entry);
    if (m && m[2] && !isIP(entry)) {
      entry = m[1]!.replace(/\]$/, "");
      entryPort = m[2];
    }
    entry = entry.replace(/^\*?\./, "");
    if (entryPort && entryPort !== port) continue;
    if (host === entry || (!isIP(host) && host.endsWith(`.${entry}`))) return true;
  }
  return false;
}

/** Opens a CONNECT tunnel through `proxy` to `host:port`. */
function tunnel(proxy: URL, host: string, port: number, signal?: AbortSignal): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: `${host}:${port}` };
    if (proxy.username || proxy.password) {
      const user = decodeURIComponent(proxy.username);
      const pass = decodeURIComponent(proxy.password);
      headers["proxy-authorization"] = `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
    }
    const send = proxy.protocol === "https:" ? https().request : httpRequest;
    const req = send({
      host: proxy.hostname.replace(/^\[|\]$/g, ""),
      port: proxy.port || (proxy.protocol === "https:" ? 443 : 80),
      method: "CONNECT",
      path: `${host.includes(":") ? `[${host}]` : host}:${port}`,
      headers,
      agent: false,
      ...(signal ? { signal } : {}),
    });
    req.once("connect", (res, socket) => {
      if (res.statusCode === 200) {
        resolve(socket);
      } else {
        socket.destroy();
        reject(
          Object.assign(new Error(`proxy refused CONNECT with HTTP ${res.statusCode}`), {
            code: "ECONNREFUSED",
          }),
        );
      }
    });
    req.once("error", reject);
    req.end();
  });
}

type ConnectOptions = { host?: string | null; port?: number | string | null; servername?: string };
type OnConnection = (err: Error | null, socket?: Duplex) => void;

/** Keep-alive agents whose connections are CONNECT tunnels through one proxy. */
function tunnelAgents(proxy: URL) {
  const options: AgentOptions = { keepAlive: true };
  class TunnelHttpAgent extends HttpAgent {
    override createConnection(o: ConnectOptions, done: OnConnection): Duplex | null | undefined {
      tunnel(proxy, String(o.host ?? "localhost"), Number(o.port ?? 80)).then(
        (socket) => done(null, socket),
        (err: Error) => done(err),
      );
      return undefined;
    }
  }
  class TunnelHttpsAgent extends https().Agent {
    override createConnection(o: ConnectOptions, done: OnConnection): Duplex | null | undefined {
      const host = String(o.host ?? "localhost");
      tunnel(proxy, host, Number(o.port ?? 443)).then(
        (socket) => {
          const tls = process.getBuiltinModule("node:tls").connect({
            ...(o as object),
            socket,
            servername: o.servername ?? (isIP(host) ? "" : host),
          });
          done(null, tls);
        },
        (err: Error) => done(err),
      );
      return undefined;
    }
  }
  return { "http:": new TunnelHttpAgent(options), "https:": new TunnelHttpsAgent(options) };
}

const proxied = new Map<string, ReturnType<typeof tunnelAgents>>();

function agentFor(url: URL): HttpAgentType {
  const protocol = url.protocol as "http:" | "https:";
  const proxy = proxyFor(url);
  if (!proxy) return direct(protocol);
  let set = proxied.get(proxy.href);
  if (!set) {
    set = tunnelAgents(proxy);
    proxied.set(proxy.href, set);
  }
  return set[protocol];
}

export async function providerFetch(
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const body = init.body;
  // A Request object is told apart without `instanceof Request`, which would load undici.
  if (
    (typeof input !== "string" && !(input instanceof URL)) ||
    (body != null && typeof body !== "string" && !(body instanceof Uint8Array))
  ) {
    return fetch(input, init);
  }
  const url = typeof input === "string" ? new URL(input) : input;
  if (url.protocol !== "http:" && url.protocol !== "https:") return fetch(input, init);
  const headers: Record<string, string> = {};
  const copy = (value: string, name: string) => {
    headers[name] = value;
  };
  // The SDKs hand a Headers (undici's or LiteHeaders, checked names, lower-cased): read it
  // as it is; anything else is checked through a LiteHeaders first.
  if (init.headers instanceof LiteHeaders) init.headers.forEach(copy);
  else new LiteHeaders(init.headers as ConstructorParameters<typeof LiteHeaders>[0]).forEach(copy);
  if (body != null) headers["content-length"] = String(Buffer.byteLength(body));
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const method = init.method ?? "GET";
  const send = url.protocol === "https:" ? https().request : httpRequest;
  const touch = activity.getStore();
  touch?.();
  return new Promise<Response>((resolve, reject) => {
    const req = send(url, { method, headers, agent: agentFor(url), signal }, (res) => {
      touch?.();
      const out = new LiteHeaders();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
        out.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
      }
      const status = res.statusCode ?? 0;
      if (status < 200 || status > 599) {
        res.destroy();
        reject(new Error(`provider answered with HTTP status ${status}`));
        return;
      }
      const empty = status === 204 || status === 304 || method === "HEAD";
      if (empty) res.resume();
      const meta = { status, statusText: res.statusMessage ?? "", headers: out, url: url.href };
      // The SDKs read a Response's status, headers and body, nothing undici adds (lite-web.ts).
      resolve(new LiteResponse(meta, empty ? null : res, touch) as unknown as Response);
    });
    req.on("error", reject);
    req.end(body ?? undefined);
  });
}
