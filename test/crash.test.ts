// Durability: SIGKILL the host while clients enqueue; nothing acknowledged is lost.
import { openRecords } from "./helpers/raw-store.ts";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { RuntimeHost } from "../src/host/host.ts";
import type { TurnExecutor } from "../src/agent/runtime.ts";

afterAll(cleanupHomes);

describe("crash safety", () => {
  it("every 2xx message survives SIGKILL exactly once and event_seq stays gap-free", async () => {
    const home = tempHome();
    const { proc, url } = await spawnServe(home);
    const acked: string[] = [];
    let killed = false;
    const client = async (n: number) => {
      for (let i = 0; !killed; i++) {
        try {
          const res = await fetch(`${url}/agents/main/enqueue`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ text: `c${n}-${i}` }),
          });
          if (res.status === 202)
            acked.push(((await res.json()) as { message_id: string }).message_id);
        } catch {
          return; // connection died with the host
        }
      }
    };
    const clients = Array.from({ length: 8 }, (_, n) => client(n));
    // Wait on progress, not on a rate: a loaded machine acknowledges slowly, so this fails only
    // when acknowledgements stop coming (a stall), never because 300 took longer than usual.
    let seen = -1;
    let lastProgress = Date.now();
    await waitFor(
      () => {
        if (acked.length !== seen) [seen, lastProgress] = [acked.length, Date.now()];
        if (Date.now() - lastProgress > 15_000)
          throw new Error(`enqueue stalled at ${seen} acknowledged messages`);
        return acked.length >= 300;
      },
      { what: "300 acknowledged messages", timeoutMs: 150_000 },
    );
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    killed = true;
    await exited;
    await Promise.all(clients);

    // What the dead host left mid-turn, read before a new host recovers it.
    const raw = openRecords(home);
    const midTurn = (
      raw.prepare("SELECT id FROM messages WHERE status = 'processing'").all() as { id: string }[]
    ).map((r) => r.id);
    raw.close();

    // Hold every message, so the new host's own loop does not start runs while we look.
    const parked: TurnExecutor = {
      run: (req) =>
        new Promise((resolve) =>
          req.signal.addEventListener("abort", () =>
            resolve({ kind: "aborted", reason: "shutdown" }),
          ),
        ),
    };
    const host = await RuntimeHost.open({ home, executor: () => parked });
    try {
      const db = host.store.db;
      for (const id of acked) {
        const rows = db.prepare("SELECT COUNT(*) AS n FROM messages WHERE id = ?").get(id) as {
          n: number;
        };
        expect(rows.n).toBe(1);
        const status = (await host.store.messages.get(id))!.status;
        expect(["queued", "processing", "processed", "interrupted"]).toContain(status);
      }
      const seqs = (
        db
          .prepare("SELECT event_seq FROM events WHERE agent_id = 'main' ORDER BY event_seq")
          .all() as { event_seq: number }[]
      ).map((r) => r.event_seq);
      seqs.forEach((s, i) => expect(s).toBe(i + 1));
      // what was mid-turn is recorded as interrupted, not redone
      for (const id of midTurn)
        expect((await host.store.messages.get(id))!.status).toBe("interrupted");
      // at most the one run the new host just started is in progress
      expect(
        (await host.store.messages.withStatus("main", "processing")).length,
      ).toBeLessThanOrEqual(1);
    } finally {
      await host.shutdown();
    }
  }, 180_000); // a stall bound: the waits above fail on no progress, not on a slow machine
});
