// The allowlist proxy: how a command in an agent's own network namespace (sandbox.network
// allowlist) reaches the hosts the operator allowed, and nothing else. The host listens on one
// Unix socket per agent (under run/sandbox-net/, bound into the agent's namespace holder and
// bridged there to 127.0.0.1:PROXY_PORT, see netns.ts), so the socket a connection arrives on
// says which agent asks. It speaks HTTP CONNECT, plain HTTP with an absolute URL, and SOCKS5
// (CONNECT, no authentication), told apart by the first byte.
//
// A destination is allowed when an entry of the agent's allowlist names it (read live at each
// connection, so a settings change holds at once). A name is resolved here, and a name that
// resolves to a loopback, unspecified or link-local address is refused unless the entry itself
// names that address (no rebinding onto the machine), and the host's own control port is
// refused on every local address. A refusal is answered (403, SOCKS reply 2) and reported to
// `onRefused`, at most EVENT_BURST times a minute per agent (the rest are counted).
//
// Caps: request headers 16 KiB, 128 open connections per agent, 30 s to finish the handshake;
// parsing scans each byte once.
import { isIP, connect, createServer, type Server, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";

export const MAX_HEADER_BYTES = 16 * 1024;
export const MAX_CONNECTIONS = 128;
const HANDSHAKE_MS = 30_000;
const EVENT_BURST = 20;
const EVENT_WINDOW_MS = 60_000;

export type ProxyRefusal = {
  host: string;
  port: number;
  protocol: "http_connect" | "http" | "socks5";
  reason: string;
  /** Refusals since the last one reported that were not reported (the rate cap). */
  suppressed: number;
};

export type ProxyDeps = {
  /** The agent's allowlist now; null when the agent is no longer under allowlist. */
  allowlist: (agentId: string) => readonly string[] | null | Promise<readonly string[] | null>;
  /** The host's own TCP ports (its control plane), refused on every local address. */
  protectedPorts: () => readonly number[];
  onRefused: (agentId: string, refusal: ProxyRefusal) => void;
  /** Names to addresses (default: the system resolver). */
  resolve?: (host: string) => Promise<string[]>;
  now?: () => number;
};

type Listener = {
  server: Server;
  conns: Set<Socket>;
  socketPath: string;
  /** The rate cap on refusal events. */
  windowStart: number;
  inWindow: number;
  suppressed: number;
};

type Entry = { host: string; wildcard: boolean; port: number | null; literal: boolean };

/** Parse an allowlist entry (already validated by NetworkAllowEntry). */
export function parseAllowEntry(raw: string): Entry {
  let hostPart = raw.toLowerCase();
  let port: number | null = null;
  if (hostPart.startsWith("[")) {
    const close = hostPart.indexOf("]");
    const rest = hostPart.slice(close + 1);
    if (rest.startsWith(":")) port = Number(rest.slice(1));
    hostPart = hostPart.slice(1, close);
  } else {
    const m = /^(.*):(\d{1,5})$/.exec(hostPart);
    if (m !== null) {
      hostPart = m[1]!;
      port = Number(m[2]);
    }
  }
  hostPart = hostPart.replace(/\.$/, "");
  const wildcard = hostPart.startsWith("*.");
  const host = wildcard ? hostPart.slice(2) : hostPart;
  return { host, wildcard, port, literal: isIP(host) !== 0 || host === "localhost" };
}

/** The entry of `list` allowing host:port, or null. Ports 80 and 443 when the entry has none. */
export function allowedBy(list: readonly string[], host: string, port: number): Entry | null {
  const h = host
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
  for (const raw of list) {
    const e = parseAllowEntry(raw);
    const nameOk = e.wildcard ? h.endsWith(`.${e.host}`) : h === e.host;
    const portOk = e.port === null ? port === 80 || port === 443 : port === e.port;
    if (nameOk && portOk) return e;
  }
  return null;
}

/** Loopback, unspecified or link-local: the machine itself, not a host on the network. */
export function isLocalAddress(addr: string): boolean {
  const a = addr.toLowerCase().replace(/^::ffff:/, "");
  if (isIP(a) === 4) {
    return a.startsWith("127.") || a === "0.0.0.0" || a.startsWith("169.254.");
  }
  return a === "::1" || a === "::" || /^fe[89ab]/.test(a);
}

function ownAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const i of list ?? []) out.add(i.address.toLowerCase());
  }
  return out;
}

export class NetworkProxy {
  readonly #deps: ProxyDeps;
  readonly #listeners = new Map<string, Listener>();

  constructor(deps: ProxyDeps) {
    this.#deps = deps;
  }

  /** Serve this agent on `socketPath` (idempotent). A stale socket file is replaced. */
  listen(agentId: string, socketPath: string): void {
    const had = this.#listeners.get(agentId);
    if (had !== undefined && had.socketPath === socketPath && had.server.listening) return;
    mkdirSync(dirname(socketPath), { recursive: true, mode: 0o700 });
    rmSync(socketPath, { force: true });
    const l: Listener = {
      server: createServer((c) => this.#accept(agentId, l, c)),
      conns: new Set(),
      socketPath,
      windowStart: 0,
      inWindow: 0,
      suppressed: 0,
    };
    l.server.on("error", () => {
      // a listen failure leaves the agent without a proxy: its connections are then refused
    });
    l.server.listen(socketPath);
    l.server.unref();
    this.#listeners.set(agentId, l);
  }

  listening(agentId: string): boolean {
    return this.#listeners.get(agentId)?.server.listening === true;
  }

  /** Stop serving (all agents when none is named); open tunnels are cut. */
  async close(agentId?: string): Promise<void> {
    const ids = agentId === undefined ? [...this.#listeners.keys()] : [agentId];
    await Promise.all(
      ids.map(async (id) => {
        const l = this.#listeners.get(id);
        if (l === undefined) return;
        this.#listeners.delete(id);
        for (const c of l.conns) c.destroy();
        await new Promise<void>((r) => l.server.close(() => r()));
        rmSync(l.socketPath, { force: true });
      }),
    );
  }

  #accept(agentId: string, l: Listener, client: Socket): void {
    client.on("error", () => client.destroy());
    if (l.conns.size >= MAX_CONNECTIONS) {
      client.destroy();
      return;
    }
    l.conns.add(client);
    client.once("close", () => l.conns.delete(client));
    client.setTimeout(HANDSHAKE_MS, () => client.destroy());
    let buf: Buffer = Buffer.alloc(0);
    let scanned = 0;
    let socksStage: "greeting" | "request" | null = null;
    const onData = (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      if (socksStage === null && buf[0] === 0x05) socksStage = "greeting";
      if (socksStage !== null) {
        const r = this.#socks(socksStage, buf);
        if (r === "more") return;
        if (r === "bad") return void client.destroy();
        if ("greeted" in r) {
          client.write(Buffer.from([0x05, r.ok ? 0x00 : 0xff]));
          if (!r.ok) return void client.end();
          buf = buf.subarray(r.used);
          socksStage = "request";
          if (buf.length > 0) onData(Buffer.alloc(0));
          return;
        }
        client.off("data", onData);
        client.pause();
        if ("reply" in r) {
          client.end(Buffer.from([0x05, r.reply, 0x00, 0x01, 0, 0, 0, 0, 0, 0]));
          return;
        }
        const rest = buf.subarray(r.used);
        void this.#open(agentId, l, client, "socks5", r.host, r.port, rest, null);
        return;
      }
      // HTTP: find the end of the header, scanning only bytes not yet scanned.
      const end = buf.indexOf("\r\n\r\n", Math.max(0, scanned - 3));
      if (end < 0) {
        scanned = buf.length;
        if (buf.length > MAX_HEADER_BYTES) {
          client.off("data", onData);
          client.end(httpReply(431, "request header too large"));
        }
        return;
      }
      client.off("data", onData);
      client.pause();
      if (end > MAX_HEADER_BYTES)
        return void client.end(httpReply(431, "request header too large"));
      const head = buf.subarray(0, end).toString("latin1");
      const rest = buf.subarray(end + 4);
      const lines = head.split("\r\n");
      const m = /^([A-Z]+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0] ?? "");
      if (m === null) return void client.end(httpReply(400, "not an HTTP proxy request"));
      const [, method, target, version] = m as unknown as [string, string, string, string];
      if (method === "CONNECT") {
        const t = splitHostPort(target);
        if (t === null) return void client.end(httpReply(400, "CONNECT needs host:port"));
        void this.#open(agentId, l, client, "http_connect", t.host, t.port, rest, null);
        return;
      }
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        return void client.end(httpReply(400, "a proxy request needs an absolute http:// URL"));
      }
      if (url.protocol !== "http:") {
        return void client.end(httpReply(400, "only http:// here; https goes through CONNECT"));
      }
      const headers = lines
        .slice(1)
        .filter((h) => !/^(proxy-connection|proxy-authorization|connection|keep-alive):/i.test(h));
      const request =
        `${method} ${url.pathname}${url.search} ${version}\r\n` +
        [...headers, "Connection: close"].join("\r\n") +
        "\r\n\r\n";
      const port = url.port === "" ? 80 : Number(url.port);
      const host = url.hostname.replace(/^\[|\]$/g, "");
      void this.#open(agentId, l, client, "http", host, port, rest, Buffer.from(request, "latin1"));
    };
    client.on("data", onData);
  }

  /** One SOCKS5 step over the buffered bytes. */
  #socks(
    stage: "greeting" | "request",
    b: Buffer,
  ):
    | "more"
    | "bad"
    | { greeted: true; ok: boolean; used: number }
    | { reply: number }
    | { host: string; port: number; used: number } {
    if (stage === "greeting") {
      if (b.length < 2) return "more";
      const n = b[1]!;
      if (b.length < 2 + n) return "more";
      const methods = b.subarray(2, 2 + n);
      return { greeted: true, ok: methods.includes(0x00), used: 2 + n };
    }
    if (b.length < 5) return "more";
    if (b[0] !== 0x05) return "bad";
    if (b[1] !== 0x01) return { reply: 0x07 }; // only CONNECT
    const atyp = b[3];
    let host: string;
    let at: number;
    if (atyp === 0x01) {
      if (b.length < 10) return "more";
      host = [...b.subarray(4, 8)].join(".");
      at = 8;
    } else if (atyp === 0x03) {
      const len = b[4]!;
      if (b.length < 5 + len + 2) return "more";
      host = b.subarray(5, 5 + len).toString("latin1");
      at = 5 + len;
    } else if (atyp === 0x04) {
      if (b.length < 22) return "more";
      const parts: string[] = [];
      for (let i = 0; i < 16; i += 2) parts.push(b.readUInt16BE(4 + i).toString(16));
      host = parts.join(":");
      at = 20;
    } else return { reply: 0x08 };
    return { host, port: b.readUInt16BE(at), used: at + 2 };
  }

  /** Check the destination, then connect and splice, or refuse. */
  async #open(
    agentId: string,
    l: Listener,
    client: Socket,
    protocol: ProxyRefusal["protocol"],
    host: string,
    port: number,
    rest: Buffer,
    request: Buffer | null,
  ): Promise<void> {
    const verdict = await this.#check(agentId, host, port);
    if (client.destroyed) return;
    if ("refused" in verdict) {
      this.#report(agentId, l, { host, port, protocol, reason: verdict.refused });
      if (protocol === "socks5") client.end(Buffer.from([0x05, 0x02, 0, 0x01, 0, 0, 0, 0, 0, 0]));
      else client.end(httpReply(403, `holon sandbox: ${host}:${port} ${verdict.refused}`));
      return;
    }
    const upstream = connect({ host: verdict.address, port });
    let connected = false;
    const cut = () => {
      upstream.destroy();
      client.destroy();
    };
    upstream.on("error", () => {
      if (client.destroyed) return;
      if (connected) cut();
      else if (protocol === "socks5") {
        client.end(Buffer.from([0x05, 0x05, 0, 0x01, 0, 0, 0, 0, 0, 0]));
      } else client.end(httpReply(502, `holon sandbox: cannot connect to ${host}:${port}`));
    });
    l.conns.add(upstream);
    upstream.once("close", () => l.conns.delete(upstream));
    upstream.once("connect", () => {
      connected = true;
      client.setTimeout(0);
      if (protocol === "socks5") client.write(Buffer.from([0x05, 0, 0, 0x01, 0, 0, 0, 0, 0, 0]));
      else if (protocol === "http_connect") {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      } else upstream.write(request!);
      if (rest.length > 0) upstream.write(rest);
      client.pipe(upstream);
      upstream.pipe(client);
      client.once("close", cut);
      upstream.once("close", cut);
      client.resume();
    });
  }

  async #check(
    agentId: string,
    host: string,
    port: number,
  ): Promise<{ address: string } | { refused: string }> {
    const list = await this.#deps.allowlist(agentId);
    if (list === null) return { refused: "is refused: the agent's network is not an allowlist" };
    if (port < 1 || port > 65535 || host.length === 0 || host.length > 255) {
      return { refused: "is not a valid destination" };
    }
    const entry = allowedBy(list, host, port);
    if (entry === null) return { refused: "is not on the agent's network allowlist" };
    let addresses: string[];
    const h = host.replace(/^\[|\]$/g, "");
    if (isIP(h) !== 0) addresses = [h];
    else {
      try {
        addresses = await (this.#deps.resolve ?? resolveAll)(h);
      } catch {
        addresses = [];
      }
      if (addresses.length === 0) return { refused: "does not resolve" };
    }
    const protectedPorts = this.#deps.protectedPorts();
    const own = protectedPorts.includes(port) ? ownAddresses() : null;
    for (const a of addresses) {
      const local = isLocalAddress(a);
      if (local && !entry.literal) {
        return { refused: `resolves to ${a}, a local address the allowlist does not name` };
      }
      if (own !== null && (local || own.has(a.toLowerCase()))) {
        return { refused: "is the host's own control port" };
      }
    }
    return { address: addresses[0]! };
  }

  #report(agentId: string, l: Listener, r: Omit<ProxyRefusal, "suppressed">): void {
    const now = (this.#deps.now ?? Date.now)();
    if (now - l.windowStart >= EVENT_WINDOW_MS) {
      l.windowStart = now;
      l.inWindow = 0;
    }
    if (l.inWindow >= EVENT_BURST) {
      l.suppressed++;
      return;
    }
    l.inWindow++;
    const suppressed = l.suppressed;
    l.suppressed = 0;
    try {
      this.#deps.onRefused(agentId, { ...r, host: r.host.slice(0, 255), suppressed });
    } catch {
      // the record failed (agent gone, store closed): the refusal itself still stands
    }
  }
}

async function resolveAll(host: string): Promise<string[]> {
  // Loaded at the first name a sandboxed command connects to, not with the host.
  const { lookup } = process.getBuiltinModule("node:dns/promises");
  const r = await lookup(host, { all: true, verbatim: true });
  return r.map((x) => x.address);
}

function splitHostPort(target: string): { host: string; port: number } | null {
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(target) ?? /^([^:\s]+):(\d{1,5})$/.exec(target);
  if (m === null) return null;
  return { host: m[1]!, port: Number(m[2]) };
}

function httpReply(status: number, text: string): string {
  const reason =
    {
      400: "Bad Request",
      403: "Forbidden",
      431: "Request Header Fields Too Large",
      502: "Bad Gateway",
    }[status] ?? "Error";
  const body = `${text}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}
