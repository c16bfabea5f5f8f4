// The web console across a restart of the host, in a real browser (one per file).
//
// With `console.persist_sessions` on, the host is SIGKILLed under an open agent page and
// started again on the same home and port: the page reconnects its event stream by itself
// (Last-Event-ID), and the reply of a turn scripted after the restart appears once, with
// every event in between and none twice, without reloading the page.
//
// With sessions in memory (the default), a restart ends the session: the page stops
// retrying and says plainly that the session ended and how to log in again.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { cleanupHomes, spawnServe, startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";
import {
  HAVE_CHROMIUM,
  launchBrowser,
  logIn,
  newPage,
  type TestBrowser,
} from "./helpers/browser.ts";
import { presentEvent, shows } from "../src/client/presentation.ts";
import type { EventEnvelope } from "../src/domain/events.ts";

const fake = useFakeProvider();
let b: TestBrowser;
let page: Page;

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  b = await launchBrowser();
  ({ page } = await newPage(b));
  page.setDefaultTimeout(20_000);
});
afterAll(async () => {
  await b?.close();
  cleanupHomes();
});

type Serve = { proc: ChildProcess; url: string; auth: Record<string, string> };

async function call(s: { url: string; auth: Record<string, string> }, path: string, body = {}) {
  const res = await fetch(s.url + path, {
    method: "POST",
    headers: { ...s.auth, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * What the conversation shows at `verbose`, as the host's events say: seqs, oldest first
 * (with `containing`: only the items whose row shows that text).
 */
async function expectedSeqs(s: Serve, containing?: string): Promise<number[]> {
  const res = await fetch(`${s.url}/control/agents/main/events?limit=500&order=asc`, {
    headers: s.auth,
  });
  const page = (await res.json()) as { events: EventEnvelope[] };
  const out: number[] = [];
  for (const e of page.events) {
    let it;
    try {
      it = presentEvent(e);
    } catch {
      continue;
    }
    if (!it || !shows(it, "verbose")) continue;
    if (containing !== undefined && !`${it.title} ${it.summary || it.body}`.includes(containing))
      continue;
    out.push(it.seq);
  }
  return out;
}

/**
 * The item count the page's bar shows, and the seqs of the rows it has drawn (with
 * `containing`: of the rows showing that text).
 */
async function shown(p: Page, containing = ""): Promise<{ count: number; seqs: number[] }> {
  return p.evaluate((text) => {
    const d = (globalThis as any).document;
    const count = Number(/(\d+) items/.exec(d.querySelector(".bar").textContent)?.[1] ?? -1);
    const seqs = [...d.querySelectorAll("[data-seq]")]
      .filter((el: any) => el.textContent.includes(text))
      .map((el: any) => Number(el.dataset.seq))
      // Rows are reused in place: the page's order is not the visual one.
      .sort((a: number, b: number) => a - b);
    return { count, seqs };
  }, containing);
}

async function killed(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGKILL");
  await exited;
}

describe.skipIf(!HAVE_CHROMIUM)("the console across a host restart", () => {
  it("with persisted sessions: after a SIGKILL and a restart on the same port, the stream resumes with no gap and no duplicate", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const cfgPath = join(home, "config.json");
    const cfg = JSON.parse(readFileSync(cfgPath, "utf8"));
    writeFileSync(cfgPath, JSON.stringify({ ...cfg, console: { persist_sessions: true } }), {
      mode: 0o600,
    });
    let serve: Serve = await spawnServe(home);
    try {
      const link = await call(serve, "/control/console/login-link");
      await page.goto(link.url as string);
      await page.locator('tr[data-agent="main"]').waitFor();
      await page.goto(`${serve.url}/ui/#/agent/main`);
      await page.locator('[data-testid="live"]', { hasText: "live" }).waitFor();
      fake.enqueue(reply.text("answer from before the restart"));
      await call(serve, "/control/agents/main/prompt", { text: "first question" });
      await page.getByText("answer from before the restart").first().waitFor();
      // A mark in the page's own memory: it must still be there at the end (no reload).
      await page.evaluate(() => ((globalThis as any).__sameDocument = true));

      await killed(serve.proc);
      await page.locator('[data-testid="live"]', { hasText: "connecting" }).waitFor();
      const port = new URL(serve.url).port;
      serve = await spawnServe(home, ["--port", port]);
      expect(new URL(serve.url).port).toBe(port);
      // The turn runs at once: its events may well happen before the page is back.
      fake.enqueue(reply.text("answer from after the restart"));
      await call(serve, "/control/agents/main/prompt", { text: "second question" });

      await page.locator('[data-testid="live"]', { hasText: "live" }).waitFor();
      await page.getByText("answer from after the restart").first().waitFor();
      // The turn is over when its last event is in; then the page holds what the host has.
      let expected: number[] = [];
      await waitFor(
        async () => {
          expected = await expectedSeqs(serve);
          const s = await shown(page);
          return s.seqs.at(-1) === expected.at(-1) && s.count === expected.length;
        },
        { what: "the page to show every event the host has", timeoutMs: 20_000 },
      );
      const s = await shown(page);
      // The rows drawn are a contiguous run of the expected ones, ending at the newest.
      const from = expected.indexOf(s.seqs[0]!);
      expect(from).toBeGreaterThanOrEqual(0);
      expect(s.seqs).toEqual(expected.slice(from, from + s.seqs.length));
      expect(new Set(s.seqs).size).toBe(s.seqs.length);
      // The reply's rows (the assistant's message, and whatever else quotes it) once each.
      const after = "answer from after the restart";
      const replyRows = await expectedSeqs(serve, after);
      expect(replyRows.length).toBeGreaterThan(0);
      expect((await shown(page, after)).seqs).toEqual(replyRows);
      expect(await page.evaluate(() => (globalThis as any).__sameDocument)).toBe(true);
      expect(await page.locator('[role="alert"]').count()).toBe(0);
    } finally {
      await killed(serve.proc);
    }
  });

  it("with sessions in memory (the default): a restart ends the session and the page says so", async () => {
    const home = tempHome();
    let rt = await startRuntime({ home });
    const port = rt.server.httpAddr.split(":").at(-1)!;
    try {
      await logIn(page, rt);
      await page.goto(`${rt.url}/ui/#/agent/main`);
      await page.locator('[data-testid="live"]', { hasText: "live" }).waitFor();
      await rt.close();
      rt = await startRuntime({ home, serve: { port: Number(port) } });
      await page.locator('[data-testid="session-ended"]').waitFor();
      expect(await page.getByText("Run holon console", { exact: false }).count()).toBe(1);
      expect(await page.locator('[aria-busy="true"]').count()).toBe(0);
    } finally {
      await rt.close();
    }
  });
});
