// How the provider SDK clients are made: the options every client gets, one client per
// candidate, and the fetch they all send through (node:http(s) with keep-alive agents, so
// connections are pooled here whatever client sends).
//
// The SDKs accept any fetch; Node's built-in one (undici over web streams) costs a few hundred
// microseconds more per request than node:http, which an agent pays on every model round.
// Requests this does not handle (a body other than a string or bytes) go to the global fetch.
// Abort works through the request's signal; network errors surface as the SDK's connection
// errors, as with the built-in fetch.
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { Readable } from "node:stream";
import { RETRY_POLICY, type ModelCandidate } from "./types.ts";

/** Options every SDK client gets: no SDK retries (Holon retries), Holon's timeout, no logging. */
export function sdkOptions(candidate: ModelCandidate) {
  return {
    baseURL: candidate.base_url,
    maxRetries: 0,
    timeout: RETRY_POLICY.request_timeout_ms,
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

const agents = {
  "http:": new HttpAgent({ keepAlive: true }),
  "https:": new HttpsAgent({ keepAlive: true }),
};

export async function providerFetch(
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const body = init.body;
  if (
    input instanceof Request ||
    (body != null && typeof body !== "string" && !(body instanceof Uint8Array))
  ) {
    return fetch(input, init);
  }
  const url = typeof input === "string" ? new URL(input) : input;
  if (url.protocol !== "http:" && url.protocol !== "https:") return fetch(input, init);
  const headers: Record<string, string> = {};
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value;
  });
  if (body != null) headers["content-length"] = String(Buffer.byteLength(body));
  const signal = init.signal ?? undefined;
  signal?.throwIfAborted();
  const method = init.method ?? "GET";
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<Response>((resolve, reject) => {
    const req = send(
      url,
      { method, headers, agent: agents[url.protocol as "http:" | "https:"], signal },
      (res) => {
        const out = new Headers();
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
        resolve(
          new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
            status,
            statusText: res.statusMessage ?? "",
            headers: out,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body ?? undefined);
  });
}
