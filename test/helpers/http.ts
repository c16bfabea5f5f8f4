// Raw HTTP for attack tests: node:http lets a test set any `Host` header and talk to the
// Unix socket, which fetch does not.
import { request } from "node:http";

export type RawTarget = { url: string } | { socketPath: string };

export function rawRequest(
  target: RawTarget,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<{ status: number; json: any; text: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...opts.headers };
    // `host: ""` sends no Host header at all.
    const setHost = headers.host === undefined;
    if (headers.host === "") delete headers.host;
    const body = opts.body === undefined ? undefined : Buffer.from(opts.body);
    if (body) headers["content-length"] = String(body.length);
    const where =
      "socketPath" in target
        ? { socketPath: target.socketPath }
        : (() => {
            const u = new URL(target.url);
            return { host: u.hostname.replace(/^\[|\]$/g, ""), port: Number(u.port) };
          })();
    const req = request(
      {
        ...where,
        method,
        path,
        headers,
        setHost,
        ...(opts.localAddress ? { localAddress: opts.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, json, text });
        });
      },
    );
    req.once("error", reject);
    req.end(body);
  });
}
