// Transactions with async bodies, afterCommit, and the tx guard (docs/architecture.md,
// "Transactions and the one rule"): an async body keeps its transaction open until it
// settles, nested calls in its async context join it, other contexts wait (async) or fail
// loudly (sync), a rollback undoes rows, caches and events, and under HOLON_TX_GUARD a body
// that yields to timers or I/O is rolled back. Real SQLite files in a temp dir.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setImmediate as immediate, setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it } from "vitest";
import { Ingress } from "../src/agent/ingress.ts";
import { AgentSignals } from "../src/agent/signals.ts";
import { AgentRecord } from "../src/domain/agent.ts";
import { randomIds, systemClock } from "../src/domain/clock.ts";
import type { CatalogEvent } from "../src/domain/events.ts";
import { HolonError } from "../src/domain/errors.ts";
import { Store } from "../src/store/db.ts";
import { WakeHints } from "../src/waiting/wake-hints.ts";
import { agentRecord } from "./helpers/records.ts";

const dir = mkdtempSync(join(tmpdir(), "holon-tx-async-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const paths = new WeakMap<Store, string>();

async function open(opts: { txGuard?: boolean } = {}): Promise<Store> {
  const path = join(dir, `db-${++n}.sqlite3`);
  const store = new Store(path, systemClock, randomIds, opts);
  paths.set(store, path);
  await store.tx(async () => await store.agents.put(record("a", 0)));
  return store;
}

/** Read what is committed through a second connection to the same file. */
function committed<T>(store: Store, sql: string): T | undefined {
  const other = new DatabaseSync(paths.get(store)!, { readOnly: true });
  try {
    return other.prepare(sql).get() as T | undefined;
  } finally {
    other.close();
  }
}

const record = (id: string, count: number) => agentRecord(id, count);

/** The committed message count of agent "a" (the field these tests write). */
function committedCount(store: Store): number | undefined {
  const row = committed<{ data: string }>(store, "SELECT data FROM agents WHERE agent_id = 'a'");
  return row ? (JSON.parse(row.data) as AgentRecord).total_message_count : undefined;
}

async function event(store: Store, source: string): Promise<CatalogEvent> {
  return await store.appendEvent("a", {
    type: "wake_requested",
    payload: { source, disposition: "x" },
  });
}

async function kindOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return err instanceof HolonError ? err.kind : String(err);
  }
  return "resolved";
}

function kindOfSync(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return err instanceof HolonError ? err.kind : String(err);
  }
  return "returned";
}

describe("afterCommit", () => {
  it("runs after the outermost commit, after the listeners, in order, once per function", async () => {
    const store = await open();
    const log: string[] = [];
    store.onEvents((events) => log.push(`events:${events.length}`));
    const twice = () => log.push("twice");
    await store.tx(async () => {
      store.afterCommit(() => log.push("first"));
      await store.tx(async () => {
        await event(store, "inner");
        store.afterCommit(twice);
        store.afterCommit(twice);
      });
      store.afterCommit(() => log.push("last"));
      expect(log).toEqual([]); // nothing before the commit, a nested one's hooks included
    });
    expect(log).toEqual(["events:1", "first", "twice", "last"]);
    store.close();
  });

  it("is dropped on rollback and runs at once outside a transaction", async () => {
    const store = await open();
    const log: string[] = [];
    await expect(
      store.tx(() => {
        store.afterCommit(() => log.push("never"));
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(log).toEqual([]);
    store.afterCommit(() => log.push("now"));
    expect(log).toEqual(["now"]);
    // The next transaction does not inherit the dropped hook.
    await store.tx(async () => await store.agents.put(record("a", 1)));
    expect(log).toEqual(["now"]);
    store.close();
  });

  it("a throwing hook breaks neither the commit nor the hooks after it", async () => {
    const store = await open();
    const log: string[] = [];
    const out = await store.tx(async () => {
      await store.agents.put(record("a", 5));
      store.afterCommit(() => {
        throw new Error("broken hook");
      });
      store.afterCommit(() => log.push("after"));
      return "done";
    });
    expect(out).toBe("done");
    expect(log).toEqual(["after"]);
    expect(committedCount(store)).toBe(5);
    store.close();
  });

  it("the ingress signals the agent only after the caller's transaction commits", async () => {
    const store = await open();
    const signals = new AgentSignals();
    const ingress = new Ingress(store, signals);
    let notified = 0;
    let visible: number | undefined;
    signals.subscribe("a", () => {
      notified++;
      // What the loop will read: the queue, through another connection (committed rows only).
      visible = committed<{ n: number }>(
        store,
        "SELECT COUNT(*) AS n FROM messages WHERE agent_id = 'a'",
      )!.n;
    });
    const draft = {
      agent_id: "a",
      kind: "system_tick",
      origin: { kind: "system", subsystem: "test" },
      body: { type: "text", text: "hello" },
      surface: "runtime_system",
      admission: "runtime_owned",
    } as const;
    await store.tx(async () => {
      await ingress.admit(draft);
      expect(notified).toBe(0);
    });
    expect(notified).toBe(1);
    expect(visible).toBe(1);
    await expect(
      store.tx(async () => {
        await ingress.admit(draft);
        throw new Error("caller failed");
      }),
    ).rejects.toThrow("caller failed");
    expect(notified).toBe(1); // the rolled-back admission never woke the loop
    store.close();
  });

  it("a pending wake hint signals the loop only after the caller's transaction commits", async () => {
    const store = await open();
    await store.tx(
      async () => await store.agents.put({ ...record("a", 0), status: "awake_running" }),
    );
    const signals = new AgentSignals();
    const hints = new WakeHints(store, new Ingress(store, signals), signals);
    let notified = 0;
    signals.subscribe("a", () => notified++);
    const hint = {
      source: "operator",
      origin: { kind: "operator" },
      surface: "http_control_prompt",
      admission: "control_authenticated",
    } as const;
    await store.tx(async () => {
      expect((await hints.submit("a", hint)).disposition).toBe("pending");
      expect(notified).toBe(0);
    });
    expect(notified).toBe(1);
    await expect(
      store.tx(async () => {
        await hints.submit("a", hint);
        throw new Error("caller failed");
      }),
    ).rejects.toThrow("caller failed");
    expect(notified).toBe(1);
    store.close();
  });
});

describe("async transactions", () => {
  it("stay open across the body's awaits and commit once it resolves", async () => {
    const store = await open();
    const published: string[] = [];
    store.onEvents((events) => published.push(...events.map((e) => e.type)));
    const before = store.counts.transactions;
    let hooked = false;
    let settled: boolean | undefined;
    const out = await store.tx(async () => {
      await store.agents.put(record("a", 1));
      await Promise.resolve();
      const seen = (await store.agents.get("a"))!.total_message_count;
      await event(store, "body");
      store.whenSettled((ok) => (settled = ok));
      store.afterCommit(() => (hooked = true));
      // A nested sync tx and a nested async tx join this one.
      store.txSync(() => store.sync.agents.put(record("a", 2)));
      await store.tx(async () => {
        await Promise.resolve();
        await store.agents.put(record("a", 3));
      });
      expect(published).toEqual([]);
      expect(committedCount(store)).toBe(0);
      return seen;
    });
    expect(out).toBe(1);
    expect(store.counts.transactions - before).toBe(1);
    expect(committedCount(store)).toBe(3);
    expect(published).toEqual(["wake_requested"]);
    expect(settled).toBe(true);
    expect(hooked).toBe(true);
    store.close();
  });

  it("roll back on rejection: rows, the agent cache, event numbers and hooks", async () => {
    const store = await open();
    const published: CatalogEvent[] = [];
    store.onEvents((events) => published.push(...events));
    await store.tx(async () => {
      await event(store, "kept");
    });
    let settled: boolean | undefined;
    let hooked = false;
    const kind = await kindOf(
      store.tx(async () => {
        await store.agents.put(record("a", 9));
        await Promise.resolve();
        await event(store, "lost");
        store.whenSettled((ok) => (settled = ok));
        store.afterCommit(() => (hooked = true));
        throw new HolonError("test_failure", "the body failed");
      }),
    );
    expect(kind).toBe("test_failure");
    expect(settled).toBe(false);
    expect(hooked).toBe(false);
    expect((await store.agents.get("a"))!.total_message_count).toBe(0); // the cache forgot the put
    expect(committedCount(store)).toBe(0);
    // The next event takes the number after the last committed one: no gap, no reuse.
    const next = await store.tx(async () => await event(store, "next"));
    expect(next.event_seq).toBe(published[0]!.event_seq + 1);
    expect(published.map((e) => e.payload)).toEqual([
      { source: "kept", disposition: "x" },
      { source: "next", disposition: "x" },
    ]);
    store.close();
  });

  it("from different async contexts never share a transaction: the second waits", async () => {
    const store = await open();
    const log: string[] = [];
    let startedSync = false;
    const first = store.tx(async () => {
      startedSync = true;
      log.push("first:begin");
      await store.agents.put(record("a", 1));
      for (let i = 0; i < 5; i++) await Promise.resolve();
      await store.agents.put(record("a", 2));
      log.push("first:end");
    });
    // No extra tick when nothing was open: the body began inside the call.
    expect(startedSync).toBe(true);
    const second = store.tx(async () => {
      log.push(`second:begin saw ${(await store.agents.get("a"))!.total_message_count}`);
      await store.agents.put(record("a", 10));
    });
    const third = store.tx(async () => {
      log.push(`third:begin saw ${(await store.agents.get("a"))!.total_message_count}`);
    });
    await Promise.all([first, second, third]);
    expect(log).toEqual(["first:begin", "first:end", "second:begin saw 2", "third:begin saw 10"]);
    expect(store.counts.transactions).toBeGreaterThanOrEqual(4);
    expect(committedCount(store)).toBe(10);
    store.close();
  });

  it("an afterCommit hook that starts an async transaction queues behind the waiting ones", async () => {
    const store = await open();
    const log: string[] = [];
    let hooked: Promise<void> | undefined;
    const first = store.tx(async () => {
      await Promise.resolve();
      store.afterCommit(() => {
        hooked = store.tx(async () => {
          log.push(`hook saw ${(await store.agents.get("a"))!.total_message_count}`);
        });
      });
      log.push("first");
    });
    const second = store.tx(async () => {
      await store.agents.put(record("a", 2));
      log.push("second");
    });
    await Promise.all([first, second]);
    await hooked;
    expect(log).toEqual(["first", "second", "hook saw 2"]);
    store.close();
  });

  it("a repository call or transaction from another context waits and sees only committed rows; a sync one, an event or whenSettled fails instead of joining", async () => {
    const store = await open();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const body = store.tx(async () => {
      await store.agents.put(record("a", 7));
      await gate; // resolved below by a microtask, never by the event loop
      await store.agents.put(record("a", 8));
    });
    // The body is suspended with its transaction open; this code is another context.
    const settled: string[] = [];
    const track = <T>(label: string, p: Promise<T>): Promise<T> => {
      void p.then(
        () => settled.push(label),
        () => settled.push(label),
      );
      return p;
    };
    // The async faces wait their turn (a queued transaction of their own).
    const get = track("get", store.agents.get("a"));
    const pending = track("pendingCount", store.messages.pendingCount("a"));
    const outsider = track(
      "tx",
      store.tx(async () => (await store.agents.get("a"))!.total_message_count),
    );
    // The synchronous repositories, a synchronous transaction, an event and whenSettled fail.
    expect(kindOfSync(() => store.sync.agents.get("a"))).toBe("tx_interleaved");
    expect(kindOfSync(() => store.sync.messages.pendingCount("a"))).toBe("tx_interleaved");
    expect(kindOfSync(() => store.txSync(() => store.sync.agents.put(record("a", 99))))).toBe(
      "tx_interleaved",
    );
    expect(await kindOf(event(store, "outsider"))).toBe("tx_interleaved");
    expect(kindOfSync(() => store.whenSettled(() => {}))).toBe("tx_interleaved");
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(settled).toEqual([]); // none ran inside the open transaction or read its rows
    release();
    await body;
    // Once it settled, the waiting calls ran and saw only the committed rows.
    expect((await get)!.total_message_count).toBe(8);
    expect(await pending).toBe(0);
    expect(await outsider).toBe(8);
    expect((await store.agents.get("a"))!.total_message_count).toBe(8);
    expect(committedCount(store)).toBe(8);
    store.close();
  });

  it("refuses bodies that would commit early: async inside sync, a Promise from txSync, an un-awaited nested tx", async () => {
    const store = await open();
    let inner: Promise<unknown> | undefined;
    expect(() =>
      store.txSync(() => {
        store.sync.agents.put(record("a", 1));
        inner = store.tx(async () => {});
        void inner.catch(() => {});
        throw new Error("outer stops");
      }),
    ).toThrow("outer stops");
    expect(await kindOf(inner!)).toBe("tx_interleaved");

    const promised = () => store.txSync(() => Promise.resolve(1));
    expect(kindOfSync(promised)).toBe("tx_interleaved");

    let floating: Promise<void> | undefined;
    const kind = await kindOf(
      store.tx(async () => {
        await store.agents.put(record("a", 4));
        floating = store.tx(async () => {
          await Promise.resolve();
          await Promise.resolve();
        });
      }),
    );
    await floating;
    expect(kind).toBe("tx_unawaited");
    expect(committedCount(store)).toBe(0);
    expect((await store.agents.get("a"))!.total_message_count).toBe(0);
    store.close();
  });
});

describe("the tx guard (HOLON_TX_GUARD)", () => {
  it("is on for the whole test suite", () => {
    expect(process.env.HOLON_TX_GUARD).toBe("1");
  });

  it("commits a body that awaits only store calls", async () => {
    const store = await open({ txGuard: true });
    await store.tx(async () => {
      for (let i = 1; i <= 20; i++) {
        const a = await Promise.resolve((await store.agents.get("a"))!);
        await store.agents.put({ ...a, total_message_count: i });
        await store.tx(async () => {
          await event(store, `round ${i}`);
        });
      }
    });
    expect(committedCount(store)).toBe(20);
    store.close();
  });

  const yields: [string, () => Promise<unknown>][] = [
    ["a timer", () => sleep(1)],
    ["an immediate", () => immediate()],
    ["a file read", () => readFile(file)],
  ];
  const file = join(dir, "input.txt");
  writeFileSync(file, "some bytes");

  it.each(yields)("rolls back a body that awaits %s, leaving nothing written", async (_, wait) => {
    const store = await open({ txGuard: true });
    const published: CatalogEvent[] = [];
    store.onEvents((events) => published.push(...events));
    const kind = await kindOf(
      store.tx(async () => {
        await store.agents.put(record("a", 3));
        await event(store, "before the wait");
        await wait();
        await store.agents.put(record("a", 4));
      }),
    );
    expect(kind).toBe("tx_yielded");
    expect(committedCount(store)).toBe(0);
    expect((await store.agents.get("a"))!.total_message_count).toBe(0);
    expect(published).toEqual([]);
    store.close();
  });

  it("catches a timer awaited by a transaction begun inside an immediate", async () => {
    const store = await open({ txGuard: true });
    const kind = await new Promise<string>((resolve) =>
      setImmediate(() => {
        void kindOf(
          store.tx(async () => {
            await store.agents.put(record("a", 3));
            await sleep(0);
          }),
        ).then(resolve);
      }),
    );
    expect(kind).toBe("tx_yielded");
    expect(committedCount(store)).toBe(0);
    store.close();
  });

  it("off, the same yielding body commits (the guard is what failed it)", async () => {
    const store = await open({ txGuard: false });
    await store.tx(async () => {
      await store.agents.put(record("a", 3));
      await sleep(1);
    });
    expect(committedCount(store)).toBe(3);
    store.close();
  });
});
