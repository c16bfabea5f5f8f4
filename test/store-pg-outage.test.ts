// A Postgres outage under a running `holon serve`: the server stops taking connections and
// the host's session is ended. While it lasts, what needs the database fails with an error
// (`database_unavailable`), and the host stays up, background work included (an operator
// ask's delivery retried in the middle of it); once the server is back, the next prompt is
// admitted and answered on a new connection, and the records before and after the outage
// are all there.
import type { ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { cliTurns } from "./helpers/turns.ts";
import { freshDatabaseUrl, psqlQuery, requirePostgres } from "./helpers/postgres.ts";
import { reply } from "./fake-provider/server.ts";

const pg = requirePostgres();
const fake = useFakeProvider();
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

/** A bridge's delivery callback; `onAsk` runs on each ask delivered, and says the status. */
async function bridge(onAsk: (n: number) => number) {
  let asks = 0;
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    const kind = (JSON.parse(text) as { kind?: string }).kind;
    res.writeHead(kind === "operator_ask" ? onAsk(++asks) : 202).end("{}");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/deliver`;
  return { url, asks: () => asks, close: () => server.close() };
}

describe.skipIf(!pg)("a Postgres outage under a running host", () => {
  it("fails what needs the database while it lasts, stays up, and carries on after", async () => {
    const home = tempHome();
    const url = freshDatabaseUrl();
    const db = new URL(url).pathname.slice(1);
    // The outage is staged from the server's own database (one cannot shut itself out).
    const admin = Object.assign(new URL(url), { pathname: "/postgres" }).toString();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const env = { HOLON_HOME: home, HOLON_DATABASE_URL: url };
    const cli = (...args: string[]) => runCli(args, { env, timeoutMs: 30_000 });
    const { events, turn } = cliTurns(cli);
    const outage = (on: boolean) => {
      psqlQuery(admin, `ALTER DATABASE "${db}" ALLOW_CONNECTIONS ${on ? "false" : "true"}`);
      if (on) {
        psqlQuery(
          admin,
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${db}' AND pid <> pg_backend_pid()`,
        );
      }
    };
    // The outage starts as the first ask reaches the bridge, which refuses it: the delivery's
    // retry, a second later, reads the ask from a database that is not there.
    const cb = await bridge((n) => {
      if (n === 1) outage(true);
      return n === 1 ? 503 : 202;
    });
    const host = await spawnServe(home, [], {
      HOLON_DATABASE_URL: url,
      HOLON_WORK_MAX_CONTINUATIONS: "1",
    });
    procs.push(host.proc);
    try {
      fake.enqueue(reply.text("Before the outage."));
      await turn("hello");
      const bound = await fetch(`${host.url}/control/agents/main/operator-bindings`, {
        method: "POST",
        headers: { "content-type": "application/json", ...host.auth },
        body: JSON.stringify({
          transport: "agentinbox",
          operator_actor_id: "operator:jo",
          delivery_callback_url: cb.url,
          delivery_token: "bridge-delivery-token-0123456789",
        }),
      });
      expect(bound.status).toBe(201);
      // A work item the agent does not take up ends in an ask to the operator.
      fake.setFallback(() => reply.text("Not picking it."));
      const add = await cli("work", "add", "main", "never picked");
      expect(add.code, add.stderr).toBe(0);
      await waitFor(
        () => {
          if (host.proc.exitCode !== null) throw new Error(`the host exited:\n${host.stderr()}`);
          return cb.asks() >= 2;
        },
        { what: "the ask's delivery retried", timeoutMs: 30_000 },
      );

      const during = await fetch(`${host.url}/control/agents/main/prompt`, {
        method: "POST",
        headers: { "content-type": "application/json", ...host.auth },
        body: JSON.stringify({ text: "during the outage" }),
      });
      const text = await during.text();
      expect(during.status, text).toBe(503);
      expect(JSON.parse(text).error.kind).toBe("database_unavailable");
      if (new URL(url).password) expect(text).not.toContain(new URL(url).password);
      // The CLI says the same, and the host is still there for it to ask.
      const refused = await cli("prompt", "also during the outage");
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("database_unavailable");
      expect(host.proc.exitCode).toBeNull();

      // The server is back: the next prompt is admitted and answered.
      outage(false);
      fake.enqueue(reply.text("After the outage."));
      await turn("are you back?");
      const seqs = (await events()).map((e) => e.event_seq).sort((a, b) => a - b);
      seqs.forEach((s, i) => expect(s).toBe(i + 1));
      expect(host.proc.exitCode).toBeNull();
    } finally {
      outage(false);
      cb.close();
      if (host.proc.exitCode === null && host.proc.signalCode === null) {
        const done = new Promise((r) => host.proc.once("exit", r));
        host.proc.kill("SIGTERM");
        await done;
      }
    }
  }, 120_000);
});
