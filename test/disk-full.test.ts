// A full disk under a running daemon: HOLON_HOME on a 24 MB tmpfs that another file fills
// while messages keep arriving. The host answers throughout, refuses writes with a stable
// kind, says so in its status, recovers by itself when space is freed (recording the
// outage), and every acknowledged message is there exactly once afterwards; the same when
// the host is SIGKILLed while the disk is full.
import { rmSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { ChildProcess } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import type { TurnExecutor } from "../src/agent/runtime.ts";
import { spawnServe, startRuntime, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { IS_ROOT, fillDisk, mountTmpfs, unmountAll } from "./helpers/tmpfs.ts";

const fake = useFakeProvider();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  unmountAll();
});

type Answer = { status: number; json: any; retryAfter: string | null };

/** One request; a host that does not answer within 5 s fails the test (it must never hang). */
async function call(
  url: string,
  method: string,
  path: string,
  auth: Record<string, string>,
  body?: unknown,
): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...auth }, signal: AbortSignal.timeout(5_000) };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const res = await fetch(url + path, init);
  return { status: res.status, json: await res.json(), retryAfter: res.headers.get("retry-after") };
}

async function startHost(home: string) {
  const served = await spawnServe(home);
  procs.push(served.proc);
  return served;
}

/** Everything acknowledged is stored exactly once, and the event log has no gap. */
function checkAcknowledged(home: string, acked: string[]): void {
  const db = new DatabaseSync(join(home, "holon.db"), { readOnly: true });
  try {
    const count = db.prepare("SELECT COUNT(*) AS n FROM messages WHERE id = ?");
    for (const id of acked) expect((count.get(id) as { n: number }).n, id).toBe(1);
    const seqs = (
      db
        .prepare("SELECT event_seq FROM events WHERE agent_id = 'main' ORDER BY event_seq")
        .all() as { event_seq: number }[]
    ).map((r) => r.event_seq);
    seqs.forEach((s, i) => expect(s).toBe(seqs[0]! + i));
  } finally {
    db.close();
  }
}

describe.skipIf(!IS_ROOT)("a full disk under a running host", () => {
  it("answers throughout, refuses with storage_full, recovers by itself, loses nothing acknowledged", async () => {
    const mount = mountTmpfs(24);
    const home = join(mount, "home");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.setFallback(() => reply.text("noted"));
    const { proc, url, auth, stderr } = await startHost(home);
    const acked: string[] = [];
    const enqueue = async (text: string) => {
      const r = await call(url, "POST", "/agents/main/enqueue", auth, { text });
      if (r.status === 202) acked.push(r.json.message_id);
      return r;
    };
    for (let i = 0; i < 20; i++) expect((await enqueue(`before-${i}`)).status).toBe(202);

    const filler = join(mount, "filler");
    fillDisk(filler);
    // SQLite reuses space it already has for a while; keep sending until a write is refused.
    let refused: Answer | undefined;
    for (let i = 0; i < 3_000 && !refused; i++) {
      const r = await enqueue(`full-${i}`);
      if (r.status !== 202) refused = r;
    }
    expect(refused, "a write is refused once the disk is full").toBeDefined();
    expect(refused!.status).toBe(503);
    expect(refused!.json.error.kind).toBe("storage_full");
    expect(refused!.retryAfter).toBe("5");

    // Reads and the handshake keep working while writes are refused.
    for (let i = 0; i < 5; i++) {
      expect((await call(url, "GET", "/handshake", auth)).status).toBe(200);
      expect((await call(url, "GET", "/agents/main/status", auth)).status).toBe(200);
      const r = await enqueue(`still-full-${i}`);
      expect([202, 503]).toContain(r.status);
      if (r.status === 503) expect(r.json.error.kind).toBe("storage_full");
    }
    // The status says why. The host's probe write may still fit now and then (SQLite reuses
    // pages its WAL already has) and call the store writable until the next refusal, so the
    // state is read again after another refused write until it shows.
    let n = 0;
    const runtime = await waitFor(
      async () => {
        const agent = await call(url, "GET", "/agents/main/status", auth);
        const rt = await call(url, "GET", "/control/runtime/status", auth);
        if (agent.json.storage?.state === "full" && rt.json.storage?.state === "full") return rt;
        await enqueue(`full-again-${n++}`);
        return undefined;
      },
      { what: "the status to say the store is full", timeoutMs: 20_000 },
    );
    expect(runtime.json.storage.refused_requests).toBeGreaterThan(0);

    // Space comes back: the host resumes by itself.
    rmSync(filler);
    const resumed = await waitFor(
      async () => {
        const r = await enqueue("after");
        return r.status === 202 ? r : undefined;
      },
      { what: "writes accepted again", timeoutMs: 20_000 },
    );
    expect(resumed.status).toBe(202);
    const outage = await waitFor(
      async () => {
        const ev = await call(url, "GET", "/agents/main/events?limit=1000&order=desc", auth);
        return (ev.json.events as any[]).find((e) => e.type === "storage_outage");
      },
      { what: "the storage_outage event" },
    );
    expect(outage.payload.state).toBe("full");
    expect(Date.parse(outage.payload.to)).toBeGreaterThanOrEqual(Date.parse(outage.payload.from));
    expect(outage.payload.refused_requests["POST /agents/:id/enqueue"]).toBeGreaterThan(0);
    // The queued work the outage held back now runs and writes; the state settles on ok.
    const after = await waitFor(
      async () => {
        const r = await call(url, "GET", "/agents/main/status", auth);
        return r.json.storage.state === "ok" ? r : undefined;
      },
      { what: "the storage state to be ok again", timeoutMs: 20_000 },
    );
    expect(after.json.storage.state).toBe("ok");
    expect(after.json.storage.last_outage.state).toBe("full");
    // Queued work runs again: the last message is processed.
    await waitFor(
      async () => (await call(url, "GET", "/agents/main/status", auth)).json.pending === 0,
      { what: "the queue to drain", timeoutMs: 30_000 },
    );

    // The log failed once (reported once), and writes again.
    expect(stderr().match(/cannot write the log/g)?.length ?? 0).toBeLessThanOrEqual(1);
    await call(url, "POST", "/control/runtime/shutdown", auth);
    await new Promise((r) => proc.once("exit", r));
    expect(proc.exitCode).toBe(0);
    // The outage's own event, logged as the disk came back, reaches the log.
    const log = readFileSync(join(home, "logs", "holon.log"), "utf8");
    expect(log).toContain("storage_outage");
    checkAcknowledged(home, acked);
  }, 120_000);

  it("a SIGKILL while the disk is full loses nothing acknowledged", async () => {
    const mount = mountTmpfs(24);
    const home = join(mount, "home");
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.setFallback(() => reply.text("noted"));
    const first = await startHost(home);
    const acked: string[] = [];
    const enqueue = async (url: string, auth: Record<string, string>, text: string) => {
      const r = await call(url, "POST", "/agents/main/enqueue", auth, { text });
      if (r.status === 202) acked.push(r.json.message_id);
      return r;
    };
    for (let i = 0; i < 10; i++) await enqueue(first.url, first.auth, `before-${i}`);
    const filler = join(mount, "filler");
    fillDisk(filler);
    let refused = false;
    for (let i = 0; i < 3_000 && !refused; i++) {
      refused = (await enqueue(first.url, first.auth, `full-${i}`)).status === 503;
    }
    expect(refused).toBe(true);
    const exited = new Promise((r) => first.proc.once("exit", r));
    first.proc.kill("SIGKILL");
    await exited;
    rmSync(filler);

    const second = await startHost(home);
    expect((await enqueue(second.url, second.auth, "after-restart")).status).toBe(202);
    await call(second.url, "POST", "/control/runtime/shutdown", second.auth);
    await new Promise((r) => second.proc.once("exit", r));
    checkAcknowledged(home, acked);
  }, 120_000);

  it("a turn that fails while the disk is full: its failure is recorded once, after space returns, and the agent does not spin", async () => {
    const mount = mountTmpfs(24);
    const home = join(mount, "home");
    let calls = 0;
    let explode: (() => void) | undefined;
    const executor: TurnExecutor = {
      run: async (req) => {
        calls++;
        if (calls === 1) {
          await new Promise<void>((resolve) => (explode = resolve));
          throw new Error("provider exploded");
        }
        return req.signal.aborted ? { kind: "aborted", reason: "shutdown" } : { kind: "settled" };
      },
    };
    const rt = await startRuntime({ home, executor: () => executor });
    try {
      const first = await rt.req("POST", "/agents/main/enqueue", { text: "first" });
      await waitFor(() => explode, { what: "the first turn" });
      // The run's start commits on its own once the executor waits without writing.
      await waitFor(
        async () =>
          (await rt.host.store.messages.get(first.json.message_id))!.status === "processing",
        { what: "the first turn's start" },
      );
      const filler = join(mount, "filler");
      fillDisk(filler);
      let refused = false;
      for (let i = 0; i < 3_000 && !refused; i++) {
        refused = (await rt.req("POST", "/agents/main/enqueue", { text: `q${i}` })).status === 503;
      }
      expect(refused).toBe(true);
      explode!();
      // The failure cannot be written; the loop waits for the store instead of running on.
      await waitFor(() => rt.host.store.health.state === "full", { what: "the store full" });
      for (let i = 0; i < 20; i++) await rt.req("GET", "/agents/main/status");
      expect(calls).toBe(1);
      expect((await rt.host.store.messages.get(first.json.message_id))!.status).toBe("processing");

      rmSync(filler);
      await waitFor(
        async () =>
          (await rt.host.store.messages.get(first.json.message_id))!.status === "processed",
        { what: "the failed turn to be settled", timeoutMs: 20_000 },
      );
      const failures = (await rt.host.store.briefs.recent("main", 1000)).filter(
        (b) => b.kind === "failure" && b.text.includes("provider exploded"),
      );
      expect(failures).toHaveLength(1);
      // Work runs again: a new message gets its turn.
      const next = await rt.req("POST", "/agents/main/enqueue", { text: "next" });
      expect(next.status).toBe(202);
      await waitFor(
        async () =>
          (await rt.host.store.messages.get(next.json.message_id))!.status === "processed",
        { what: "the next turn", timeoutMs: 30_000 },
      );
      expect(calls).toBeGreaterThan(1);
    } finally {
      await rt.close();
    }
  }, 120_000);
});
