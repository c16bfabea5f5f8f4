// Operator transport: a bridge registers a binding, relays its operator's prompt through
// operator-ingress, and receives the agent's brief at its callback with its bearer token,
// after a failed first attempt is retried; every outcome is an event.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import { startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

type Received = { headers: IncomingMessage["headers"]; body: any };

async function callbackServer(answers: number[]) {
  const received: Received[] = [];
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    received.push({ headers: req.headers, body: JSON.parse(text) });
    const status = answers.shift() ?? 202;
    res.writeHead(status, { "content-type": "application/json" });
    res.end(
      status < 300 ? JSON.stringify({ status: "accepted", transport_delivery_id: "ain_1" }) : "{}",
    );
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/deliver`, received, close: () => server.close() };
}

describe("operator transport bindings", () => {
  it("relays an operator prompt in and delivers the brief out, retrying a failed submit", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const cb = await callbackServer([500]);
    const rt = await startRuntime({ home });
    try {
      const token = "bridge-secret-token-0123456789";
      const made = await rt.req("POST", "/control/agents/main/operator-bindings", {
        transport: "agentinbox",
        operator_actor_id: "operator:alice",
        delivery_callback_url: cb.url,
        delivery_token: token,
        default_route_id: "route_1",
      });
      expect(made.status).toBe(201);
      const id = made.json.binding.binding_id;
      expect(JSON.stringify(made.json)).not.toContain(token);
      expect(statSync(join(home, "operator-bindings.json")).mode & 0o777).toBe(0o600);

      // Without the control token: refused.
      const anon = await rt.req("GET", "/control/agents/main/operator-bindings", undefined, {
        authorization: "",
      });
      expect(anon.status).toBe(401);
      const wrongActor = await rt.req("POST", "/control/agents/main/operator-ingress", {
        text: "x",
        actor_id: "operator:mallory",
        binding_id: id,
      });
      expect(wrongActor.status).toBe(403);

      fake.enqueue(reply.text("tests pass"));
      const sent = await rt.req("POST", "/control/agents/main/operator-ingress", {
        text: "run the tests",
        actor_id: "operator:alice",
        binding_id: id,
        upstream_provider: "telegram",
        correlation_id: "ain_789",
      });
      expect(sent.status).toBe(202);

      const delivered = await waitFor(
        async () =>
          (await rt.host.store.events.after("main", 0, 10_000)).find(
            (e) => e.type === "operator_delivery_recorded",
          ),
        { what: "delivery record", timeoutMs: 15_000 },
      );
      expect(delivered.payload).toMatchObject({
        binding_id: id,
        status: "accepted_by_transport",
        attempts: 2,
        transport_delivery_id: "ain_1",
        brief_kind: "result",
      });
      expect(cb.received).toHaveLength(2);
      const last = cb.received[1]!;
      expect(last.headers.authorization).toBe(`Bearer ${token}`);
      expect(last.headers["idempotency-key"]).toBe(last.body.delivery_intent_id);
      expect(cb.received[0]!.body.delivery_intent_id).toBe(last.body.delivery_intent_id);
      expect(last.body).toMatchObject({ binding_id: id, route_id: "route_1", text: "tests pass" });

      const admitted = (await rt.host.store.events.after("main", 0, 10_000)).find(
        (e) => e.type === "message_admitted" && e.payload.message_id === sent.json.message_id,
      )!;
      expect(admitted.provenance).toMatchObject({
        delivery_surface: "remote_operator_transport",
        admission_context: "operator_transport_authenticated",
      });

      const revoked = await rt.req("POST", `/control/agents/main/operator-bindings/${id}/revoke`);
      expect(revoked.json.binding.status).toBe("revoked");
      const after = await rt.req("POST", "/control/agents/main/operator-ingress", {
        text: "again",
        actor_id: "operator:alice",
        binding_id: id,
      });
      expect(after.status).toBe(403);
      expect(after.json.error.kind).toBe("binding_revoked");
    } finally {
      await rt.close();
      cb.close();
    }
  }, 60_000);
});
