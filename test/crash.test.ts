// Durability: SIGKILL the host while clients enqueue; nothing acknowledged is lost.
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { RuntimeHost } from "../src/host/host.ts";

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
          const res = await fetch(`${url}/enqueue`, {
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
    await waitFor(() => acked.length >= 300, { what: "300 acknowledged messages" });
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGKILL");
    killed = true;
    await exited;
    await Promise.all(clients);

    const host = RuntimeHost.open({ home });
    try {
      const db = host.store.db;
      for (const id of acked) {
        const rows = db.prepare("SELECT COUNT(*) AS n FROM messages WHERE id = ?").get(id) as {
          n: number;
        };
        expect(rows.n).toBe(1);
        const status = host.store.messages.get(id)!.status;
        expect(["queued", "processing", "processed", "interrupted"]).toContain(status);
      }
      const seqs = (
        db
          .prepare("SELECT event_seq FROM events WHERE agent_id = 'main' ORDER BY event_seq")
          .all() as { event_seq: number }[]
      ).map((r) => r.event_seq);
      seqs.forEach((s, i) => expect(s).toBe(i + 1));
      // nothing is left mid-turn after recovery
      expect(host.store.messages.withStatus("main", "processing")).toEqual([]);
    } finally {
      await host.shutdown();
    }
  });
});
