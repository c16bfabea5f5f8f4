// The event stream: replay from a cursor, then live, with no gap or duplicate.
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, startRuntime } from "./helpers/home.ts";
import { openSse } from "./helpers/sse.ts";
import type { TurnExecutor } from "../src/agent/runtime.ts";

afterAll(cleanupHomes);
const parked: TurnExecutor = { run: () => new Promise(() => {}) };

describe("event stream", () => {
  it("replays after_seq, continues live, and a Last-Event-ID reconnect gets every later event exactly once", async () => {
    const rt = await startRuntime({ executor: () => parked });
    await rt.host.lifecycle.control("main", "pause");
    const streamUrl = rt.url + "/agents/main/events/stream";
    // some history
    for (let i = 0; i < 20; i++) await rt.req("POST", "/enqueue", { text: `h${i}` });

    const auth = { authorization: `Bearer ${rt.token}` };
    const first = await openSse(streamUrl + "?after_seq=0", auth);
    expect(first.status).toBe(200);
    const seen: number[] = [];
    let producing = true;
    const producer = (async () => {
      for (let i = 0; producing && i < 400; i++)
        await rt.req("POST", "/enqueue", { text: `live${i}` });
    })();
    let lastId = "";
    for await (const f of first.frames) {
      const body = JSON.parse(f.data);
      expect(f.event).toBe(body.type);
      expect(Number(f.id)).toBe(body.event_seq);
      expect(body.projection).toMatchObject({ name: "operator", raw_payload_included: true });
      seen.push(body.event_seq);
      lastId = f.id!;
      if (seen.length === 60) break; // disconnect in the middle of live traffic
    }
    first.close();

    const second = await openSse(streamUrl, { "last-event-id": lastId, ...auth });
    const producerDone = producer.then(() => (producing = false));
    await producerDone;
    const newest = await rt.host.store.events.newestSeq("main");
    for await (const f of second.frames) {
      seen.push(Number(f.id));
      if (Number(f.id) >= newest) break;
    }
    second.close();
    expect(seen).toEqual(Array.from({ length: newest }, (_, i) => i + 1));
    await rt.close();
  });

  it("without a cursor streams only new events; bad cursors are 400", async () => {
    const rt = await startRuntime({ executor: () => parked });
    await rt.host.lifecycle.control("main", "pause");
    const before = await rt.host.store.events.newestSeq("main");
    const s = await openSse(rt.url + "/agents/main/events/stream", {
      authorization: `Bearer ${rt.token}`,
    });
    await rt.req("POST", "/enqueue", { text: "new" });
    const it = s.frames[Symbol.asyncIterator]();
    const next = await it.next();
    const body = JSON.parse(next.value!.data);
    expect(body.event_seq).toBe(before + 1);
    expect(body.type).toBe("message_admitted");
    s.close();
    expect((await rt.req("GET", "/agents/main/events/stream?after_seq=abc")).json.error.kind).toBe(
      "invalid_request",
    );
    expect((await rt.req("GET", "/agents/ghost/events/stream")).json.error.kind).toBe(
      "unknown_agent",
    );
    await rt.close();
  });

  it("GET /events pages with before_seq, after_seq, limit and order", async () => {
    const rt = await startRuntime({ executor: () => parked });
    await rt.host.lifecycle.control("main", "pause");
    for (let i = 0; i < 10; i++) await rt.req("POST", "/enqueue", { text: `m${i}` });
    const newest = await rt.host.store.events.newestSeq("main");
    const desc = await rt.req("GET", "/agents/main/events?limit=5");
    expect(desc.json.events.map((e: any) => e.event_seq)).toEqual([
      newest,
      newest - 1,
      newest - 2,
      newest - 3,
      newest - 4,
    ]);
    const asc = await rt.req("GET", "/agents/main/events?after_seq=2&limit=3&order=asc");
    expect(asc.json.events.map((e: any) => e.event_seq)).toEqual([3, 4, 5]);
    const before = await rt.req("GET", "/agents/main/events?before_seq=4&order=asc");
    expect(before.json.events.map((e: any) => e.event_seq)).toEqual([1, 2, 3]);
    expect((await rt.req("GET", "/agents/main/events?order=sideways")).status).toBe(400);
    expect((await rt.req("GET", "/agents/main/events?limit=0")).status).toBe(400);
    expect((await rt.req("GET", "/agents/main/events?projection=weird")).status).toBe(400);
    expect(
      (await rt.req("GET", "/agents/main/events?projection=local_debug")).json.events[0].projection
        .name,
    ).toBe("local_debug");
    await rt.close();
  });
});
