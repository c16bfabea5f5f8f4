// Headers and a fetch Response without undici, for the provider fetch (http-fetch.ts).
//
// Node implements the web `Headers`, `Response`, `Request` and `fetch` globals with its
// bundled undici, which loads on the first touch of any of them: some 110 builtin modules
// and 30-40 ms of CPU. The provider SDKs touch `Headers` on every request (they build the
// request's headers with `new Headers()`), and a provider fetch used to answer with
// `new Response(...)`, so a one-shot `holon run` paid that load before its first provider
// request although every request goes through node:http. Here:
//
//  - `LiteHeaders` is the Fetch standard's Headers (lower-cased names, values combined with
//    ", ", sorted iteration, `getSetCookie`); `instanceof` accepts undici's Headers too, so
//    code that checks `x instanceof Headers` (the SDKs do) sees either kind as one.
//  - `LiteResponse` is what the SDKs read of a Response: status, headers, `body` (a web
//    ReadableStream, made only when asked for), `text`/`json`/`arrayBuffer`/`blob`, `clone`.
//    A body read through `text()` or `json()` never becomes a web stream, nor does one read
//    through `chunks()`, which `sseEvents` (below) reads an event stream from.
//  - `useLiteHeaders()` puts LiteHeaders in place of the global `Headers`. Only the one-shot
//    `holon run` calls it; a host that serves HTTP loads undici for its routes anyway and
//    keeps the global as it is. The global `fetch`, `Request` and `Response` stay undici's
//    and accept LiteHeaders as any HeadersInit (an iterable of pairs).
import type { Readable } from "node:stream";

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\0\r\n]/;

type Init = Iterable<readonly [string, string]> | Record<string, string> | null | undefined;

function checkName(name: string): string {
  const n = String(name);
  if (!TOKEN.test(n)) throw new TypeError(`Headers: invalid header name "${n}"`);
  return n.toLowerCase();
}

function checkValue(value: string): string {
  // The standard's normalisation: leading and trailing HTTP whitespace go.
  const v = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, "");
  if (BAD_VALUE.test(v)) throw new TypeError("Headers: invalid header value");
  return v;
}

export class LiteHeaders {
  /** Values by lower-cased name, in the order they were appended. */
  readonly #values = new Map<string, string[]>();

  constructor(init?: Init) {
    if (init === null || init === undefined) return;
    if (typeof init !== "object") throw new TypeError("Headers: init must be an object");
    if (Symbol.iterator in init) {
      for (const pair of init as Iterable<readonly [string, string]>) {
        if (pair.length !== 2) throw new TypeError("Headers: each pair needs a name and a value");
        this.append(pair[0], pair[1]);
      }
    } else {
      for (const [name, value] of Object.entries(init)) this.append(name, value);
    }
  }

  /** Undici's Headers (or any object tagged "Headers") counts as a Headers here too. */
  static [Symbol.hasInstance](x: unknown): boolean {
    return (
      typeof x === "object" &&
      x !== null &&
      (#values in x || Object.prototype.toString.call(x) === "[object Headers]")
    );
  }

  get [Symbol.toStringTag](): string {
    return "Headers";
  }

  append(name: string, value: string): void {
    const n = checkName(name);
    const v = checkValue(value);
    const list = this.#values.get(n);
    if (list) list.push(v);
    else this.#values.set(n, [v]);
  }

  set(name: string, value: string): void {
    this.#values.set(checkName(name), [checkValue(value)]);
  }

  delete(name: string): void {
    this.#values.delete(checkName(name));
  }

  has(name: string): boolean {
    return this.#values.has(checkName(name));
  }

  get(name: string): string | null {
    const list = this.#values.get(checkName(name));
    return list === undefined ? null : list.join(", ");
  }

  getSetCookie(): string[] {
    return [...(this.#values.get("set-cookie") ?? [])];
  }

  forEach(
    callback: (value: string, name: string, parent: LiteHeaders) => void,
    thisArg?: unknown,
  ): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this);
  }

  *entries(): IterableIterator<[string, string]> {
    for (const name of [...this.#values.keys()].sort()) {
      const list = this.#values.get(name);
      if (list === undefined) continue; // deleted while iterating
      if (name === "set-cookie") for (const v of list) yield [name, v];
      else yield [name, list.join(", ")];
    }
  }

  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }

  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }

  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

/**
 * Puts LiteHeaders in place of the global `Headers`, for a process that serves no HTTP (the
 * one-shot `holon run`). By assignment: Node's lazy global takes a plain assignment without
 * loading undici, where reading or redefining the property loads it.
 */
export function useLiteHeaders(): void {
  globalThis.Headers = LiteHeaders as unknown as typeof Headers;
}

/** How long a body left by its reader may take to end before its connection is dropped. */
const DRAIN_GRACE_MS = 5_000;

/**
 * A body whose reader stopped before its end (an SSE reader that has its terminal event):
 * a body that arrived whole, or that ends within `DRAIN_GRACE_MS`, keeps its keep-alive
 * connection (destroying a response that has not ended destroys its socket); one still
 * streaming after that is destroyed.
 */
function finishEarly(source: Readable): void {
  if (source.readableEnded || source.destroyed) return;
  const timer = setTimeout(() => source.destroy(), DRAIN_GRACE_MS);
  timer.unref();
  const done = () => clearTimeout(timer);
  source.once("end", done);
  source.once("close", done);
  source.on("error", () => undefined);
  source.resume();
}

type ResponseMeta = { status: number; statusText: string; headers: LiteHeaders; url: string };

/**
 * A fetch Response over a node:http response. `touch` is called for every body chunk once a
 * reader takes the body (not before: a listener would start the stream flowing).
 */
export class LiteResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly headers: LiteHeaders;
  readonly url: string;
  readonly redirected = false;
  readonly type = "basic";
  /** The node:http stream, until the body is read or becomes a web stream. */
  #source: Readable | null;
  /** The web stream of the body: undefined until asked for; null for no body. */
  #web: ReadableStream<Uint8Array> | null | undefined;
  readonly #touch: (() => void) | undefined;
  #used = false;

  constructor(
    meta: ResponseMeta,
    source: Readable | null,
    touch?: () => void,
    web?: ReadableStream<Uint8Array>,
  ) {
    this.status = meta.status;
    this.statusText = meta.statusText;
    this.ok = meta.status >= 200 && meta.status <= 299;
    this.headers = meta.headers;
    this.url = meta.url;
    this.#source = source;
    this.#touch = touch;
    this.#web = web ?? (source === null ? null : undefined);
  }

  get [Symbol.toStringTag](): string {
    return "Response";
  }

  get body(): ReadableStream<Uint8Array> | null {
    if (this.#web === undefined) {
      const source = this.#source!;
      this.#source = null;
      if (this.#touch) source.on("data", this.#touch);
      const { Readable } = process.getBuiltinModule("node:stream");
      this.#web = Readable.toWeb(source) as ReadableStream<Uint8Array>;
    }
    return this.#web;
  }

  get bodyUsed(): boolean {
    return this.#used;
  }

  async bytes(): Promise<Uint8Array<ArrayBuffer>> {
    if (this.#used || (this.#web?.locked ?? false)) {
      throw new TypeError("Response: body has already been read");
    }
    this.#used = true;
    const chunks: Uint8Array[] = [];
    if (this.#web === undefined) {
      const source = this.#source!;
      this.#source = null;
      for await (const chunk of source as AsyncIterable<Uint8Array>) {
        this.#touch?.();
        chunks.push(chunk);
      }
    } else if (this.#web !== null) {
      for await (const chunk of this.#web as unknown as AsyncIterable<Uint8Array>)
        chunks.push(chunk);
    }
    return new Uint8Array(Buffer.concat(chunks));
  }

  /**
   * The body's chunks as they arrive, without a web stream (the provider's SSE reader,
   * sse.ts). Marks the body used, as `text()` does. A reader that stops early leaves the
   * rest of the body to end on its own (`finishEarly`), so the connection stays reusable.
   */
  async *chunks(): AsyncGenerator<Uint8Array> {
    if (this.#used || (this.#web?.locked ?? false)) {
      throw new TypeError("Response: body has already been read");
    }
    const web = this.#web;
    if (web !== undefined) {
      this.#used = true;
      if (web !== null) yield* web as unknown as AsyncIterable<Uint8Array>;
      return;
    }
    this.#used = true;
    const source = this.#source!;
    this.#source = null;
    let ended = false;
    try {
      for await (const chunk of source.iterator({ destroyOnReturn: false })) {
        this.#touch?.();
        yield chunk as Uint8Array;
      }
      ended = true;
    } finally {
      if (!ended) finishEarly(source);
    }
  }

  async arrayBuffer(): Promise<ArrayBuffer> {
    return (await this.bytes()).buffer;
  }

  async text(): Promise<string> {
    return new TextDecoder().decode(await this.bytes());
  }

  async json(): Promise<unknown> {
    return JSON.parse(await this.text());
  }

  async blob(): Promise<Blob> {
    return new Blob([await this.bytes()], { type: this.headers.get("content-type") ?? "" });
  }

  /** Two readers of one body: the web stream is split (tee), as the standard does. */
  clone(): LiteResponse {
    if (this.#used || (this.#web?.locked ?? false)) {
      throw new TypeError("Response: cannot clone a response whose body was read");
    }
    const meta = {
      status: this.status,
      statusText: this.statusText,
      headers: new LiteHeaders(this.headers),
      url: this.url,
    };
    const body = this.body;
    if (body === null) return new LiteResponse(meta, null);
    const [mine, theirs] = body.tee();
    this.#web = mine;
    return new LiteResponse(meta, null, undefined, theirs);
  }
}

// ---------------------------------------------------------------------------
// Server-sent events, read straight from a provider fetch's response, for the transports that
// take the SDK's raw response (`asResponse()`) instead of its stream object.
//
// The SDK reads a stream through the web `ReadableStream` of the body (made from the node:http
// response), copies every chunk into a growing array to find event boundaries, and decodes
// lines from bytes; on a model round that was a good part of the host's time between the
// response's head and its last event. Here the body's chunks (node:http's, with the attempt's
// activity reported per chunk, see `LiteResponse.chunks`) are decoded as text and split into
// events as they arrive. Parsing follows the SSE standard: lines end with CRLF, LF or CR; a
// blank line ends an event (one cut off by the end of the stream is dropped); `data:` lines
// join with a newline; `:` lines are comments; one space after the colon is dropped.

export type SseEvent = { event: string | null; data: string };

/** The body's chunks: node:http's through LiteResponse, else the web stream's. */
async function* bodyChunks(response: Response): AsyncGenerator<Uint8Array> {
  if (response instanceof LiteResponse) {
    yield* response.chunks();
    return;
  }
  const body = response.body;
  if (body === null) return;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      yield value;
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Longest unfinished line an SSE body may hold: a provider that never ends a line fails the
 * round instead of growing the host's memory. A Responses stream's longest line, its final
 * event with the whole answer, is a few hundred kilobytes.
 */
export const MAX_SSE_LINE_CHARS = 16 * 1024 * 1024;

/** The events of an SSE response body, in order. */
export async function* sseEvents(response: Response): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let pending = "";
  /** Characters at the start of `pending` known to hold no line end (each is scanned once). */
  let scanned = 0;
  let event: string | null = null;
  let data: string[] = [];
  let seen = false;
  /** One complete line; an event when it ends one. */
  const line = (text: string): SseEvent | null => {
    if (text === "") {
      if (!seen) return null;
      const out = { event, data: data.join("\n") };
      event = null;
      data = [];
      seen = false;
      return out;
    }
    if (text.charCodeAt(0) === 58 /* : */) return null;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.charCodeAt(0) === 32 /* space */) value = value.slice(1);
    if (field === "data") {
      data.push(value);
      seen = true;
    } else if (field === "event") {
      event = value;
      seen = true;
    }
    return null;
  };
  const split = function* (final: boolean): Generator<SseEvent> {
    let start = 0;
    for (;;) {
      let end = Math.max(start, scanned);
      while (end < pending.length) {
        const c = pending.charCodeAt(end);
        if (c === 10 || c === 13) break;
        end++;
      }
      scanned = end;
      if (end >= pending.length) break;
      // A CR at the very end may be the first half of a CRLF still on its way.
      if (pending.charCodeAt(end) === 13 && end + 1 >= pending.length && !final) break;
      const ev = line(pending.slice(start, end));
      start =
        pending.charCodeAt(end) === 13 && pending.charCodeAt(end + 1) === 10 ? end + 2 : end + 1;
      if (ev) yield ev;
    }
    pending = pending.slice(start);
    scanned = Math.max(0, scanned - start);
    if (pending.length > MAX_SSE_LINE_CHARS) {
      throw new Error(`provider stream sent a line longer than ${MAX_SSE_LINE_CHARS} characters`);
    }
  };
  for await (const chunk of bodyChunks(response)) {
    pending += decoder.decode(chunk, { stream: true });
    yield* split(false);
  }
  pending += decoder.decode();
  // An event the stream ended in the middle of is dropped, as the standard has it.
  yield* split(true);
}
