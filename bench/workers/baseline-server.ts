// Baseline servers for the admission benchmark, run as a child process like the host.
//   bare: node:http; read the body, JSON.parse it, answer a small JSON 202.
//   hono: the same on hono + @hono/node-server (the host's HTTP stack, without the store),
//         to tell framework cost from admission cost.
// Prints "listening on http://127.0.0.1:<port>" on stderr, like `holon serve`.
import { createServer, type Server } from "node:http";
import { randomUUID } from "node:crypto";

const mode = process.argv[2] ?? "bare";
const messageId = () => `msg_${randomUUID().replaceAll("-", "").slice(0, 20)}`;

let server: Server;
if (mode === "bare") {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let status = 202;
      let body: string;
      try {
        if (req.method === "POST") JSON.parse(Buffer.concat(chunks).toString("utf8"));
        body = JSON.stringify({ ok: true, agent_id: "main", message_id: messageId() });
      } catch {
        status = 400;
        body = JSON.stringify({ ok: false, error: { kind: "invalid_json" } });
      }
      res.writeHead(status, {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
    });
  });
} else if (mode === "hono") {
  const { Hono } = await import("hono");
  const { createAdaptorServer } = await import("@hono/node-server");
  const app = new Hono();
  app.post("/agents/:id/enqueue", async (c) => {
    await c.req.json();
    return c.json({ ok: true, agent_id: c.req.param("id"), message_id: messageId() }, 202);
  });
  server = createAdaptorServer({ fetch: app.fetch }) as Server;
} else {
  throw new Error(`unknown baseline mode '${mode}'`);
}
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  if (addr && typeof addr === "object") {
    process.stderr.write(`baseline (${mode}) listening on http://127.0.0.1:${addr.port}\n`);
  }
});
process.on("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
