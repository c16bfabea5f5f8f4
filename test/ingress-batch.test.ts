// Group commit of admissions: drafts of one event-loop turn share a transaction; under load
// (the last batch held more than one) a batch also waits one more loop turn for the requests
// already read from other sockets; a lone draft is committed at once. Every promise settles
// only after its message is committed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageDraft } from "../src/agent/ingress.ts";
import { startRuntime, type TestRuntime } from "./helpers/home.ts";

const draft = (text: string): MessageDraft => ({
  agent_id: "main",
  kind: "channel_event",
  origin: { kind: "channel", channel_id: "http" },
  body: { type: "text", text },
  surface: "http_public_enqueue",
  admission: "public_unauthenticated",
});
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("group commit of admissions", () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startRuntime();
    const paused = await rt.req("POST", "/control/agents/main/control", { action: "pause" });
    expect(paused.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await rt?.close();
  });

  it("under load, drafts of two loop turns share one commit; a lone draft commits at once", async () => {
    const { ingress, store } = rt.host;
    const committed = async (p: Promise<{ id: string }>) => {
      const m = await p;
      // Settled only once durable.
      expect((await store.messages.get(m.id))?.status).toBe("queued");
      return m;
    };

    // A batch of two: the ingress now sees requests arriving faster than one per turn.
    await Promise.all([ingress.admitBatched(draft("a1")), ingress.admitBatched(draft("a2"))]);
    let before = store.counts.transactions;
    await Promise.all([
      committed(ingress.admitBatched(draft("b1"))),
      nextTurn().then(async () => await committed(ingress.admitBatched(draft("b2")))),
    ]);
    expect(store.counts.transactions - before).toBe(1);

    // Quiet again: one draft alone (it still waits, the last batch held two), then the next
    // lone draft is committed in its own turn, without waiting for the one after it.
    await committed(ingress.admitBatched(draft("c1")));
    before = store.counts.transactions;
    await Promise.all([
      committed(ingress.admitBatched(draft("d1"))),
      nextTurn().then(async () => await committed(ingress.admitBatched(draft("d2")))),
    ]);
    expect(store.counts.transactions - before).toBe(2);
  });
});
