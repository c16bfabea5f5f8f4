// Attacks on the web console in a real browser that holds a live console session: a page on
// another site (localhost vs 127.0.0.1) and one on another port of the same address (the
// same site: SameSite=Strict cookies ride along) try to frame /ui/, read the API and drive
// it; all refused, and nothing is admitted. A transcript holding <script>, <img onerror>, a
// javascript: link and 2 MB on one line renders as inert text and the page stays usable.
// A used login link does not log a browser in.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { waitFor, type TestRuntime } from "./helpers/home.ts";
import { useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";
import {
  HAVE_CHROMIUM,
  loginLink,
  screenshot,
  logIn,
  openConsole,
  type ConsoleSetup,
} from "./helpers/browser.ts";

const fake = useFakeProvider();
let c: ConsoleSetup;
let rt: TestRuntime;
let page: Page;
let evil: Server;
let evilPort = 0;
/** Cookie headers the attacker's server received from the browser. */
const evilSaw: string[] = [];

/** The attacker's page: frame the console, read the API, drive it three ways. */
function attackPage(target: string): string {
  return `<!doctype html><html><body><h1>cute cats</h1>
<iframe id="f" src="${target}/ui/" width="600" height="300"></iframe>
<form id="form" method="POST" action="${target}/control/agents/main/prompt" enctype="text/plain" target="sink">
<input name='{"text":"form says hi","x":"' value='"}'></form>
<iframe name="sink"></iframe>
<img src="${target}/ui/api/overview">
<script>
window.results = {};
(async () => {
  const r = window.results;
  try {
    const res = await fetch("${target}/ui/api/overview", { credentials: "include" });
    r.read = "read " + res.status + " " + (await res.text()).slice(0, 100);
  } catch (e) { r.read = "blocked"; }
  try {
    const res = await fetch("${target}/control/agents/main/control", {
      method: "POST", credentials: "include", mode: "no-cors",
      headers: { "content-type": "text/plain" }, body: JSON.stringify({ action: "stop" }),
    });
    r.drive = res.type;
  } catch (e) { r.drive = "blocked"; }
  try {
    const res = await fetch("${target}/control/agents/main/prompt", {
      method: "POST", credentials: "include",
      headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "fetch says hi" }),
    });
    r.prompt = "sent " + res.status;
  } catch (e) { r.prompt = "blocked"; }
  document.getElementById("form").submit();
  r.done = true;
})();
</script></body></html>`;
}

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  c = await openConsole(fake);
  ({ rt, page } = c);
  evil = createServer((req, res) => {
    if (req.headers.cookie) evilSaw.push(req.headers.cookie);
    res.writeHead(200, { "content-type": "text/html" });
    res.end(attackPage(rt.url));
  });
  await new Promise<void>((r) => evil.listen(0, "127.0.0.1", () => r()));
  evilPort = (evil.address() as AddressInfo).port;
});
afterAll(async () => {
  evil?.closeAllConnections();
  await new Promise((r) => (evil ? evil.close(r) : r(null)));
  await c?.close();
});

const prompts = async () =>
  (await rt.host.store.messages.withStatus("main", "queued"))
    .concat(await rt.host.store.messages.withStatus("main", "processed"))
    .filter((m) => m.kind === "operator_prompt");

describe.skipIf(!HAVE_CHROMIUM)("attacks on the console from other pages", () => {
  it("a used login link does not log the browser in", async () => {
    const link = await loginLink(rt);
    await page.goto(link);
    await page.locator('tr[data-agent="main"]').waitFor();
    // The same link again, in a fresh page of a browser that logs out first.
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByText("You are not logged in").waitFor();
    await page.goto("about:blank");
    await page.goto(link);
    await page.getByText("unknown, already used or expired").waitFor();
    expect(await page.locator('tr[data-agent="main"]').count()).toBe(0);
    // Back in for the attacks below: the browser holds a live session while they run.
    await logIn(page, rt);
  });

  for (const [name, host] of [
    ["another site (localhost)", "localhost"],
    ["another port of the same address", "127.0.0.1"],
  ] as const) {
    it(`a page on ${name} cannot frame the console, read the API or drive it`, async () => {
      const before = (await prompts()).length;
      const refusedBefore = (await rt.host.store.events.after("main", 0, 100_000)).filter(
        (e) => e.type === "http_request_refused",
      ).length;
      const attacker = await c.browser.context.newPage();
      await attacker.goto(`http://${host}:${evilPort}/`);
      await attacker.waitForFunction(() => (globalThis as any).results?.done === true);
      const results = await attacker.evaluate(() => (globalThis as any).results);
      // Reading: CORS hides the answer, and the host refused it before any route.
      expect(results.read).toBe("blocked");
      expect(results.prompt).toBe("blocked");
      // Framing: the console never renders inside the attacker's page (the guard refuses a
      // frame's request; the page's own headers forbid framing besides).
      const frames = attacker.frames().filter((f) => f !== attacker.mainFrame());
      expect(frames.length).toBeGreaterThan(0);
      for (const f of frames) expect(await f.locator(".brand").count()).toBe(0);
      await screenshot(attacker, `attack-${host}`);
      await attacker.close();
      // Driving: nothing admitted, nothing stopped; the refusals are on record.
      await waitFor(
        async () =>
          (await rt.host.store.events.after("main", 0, 100_000)).filter(
            (e) => e.type === "http_request_refused",
          ).length >=
          refusedBefore + 3,
        { what: "the refusals to be audited" },
      );
      expect((await prompts()).length).toBe(before);
      expect((await rt.host.store.agents.get("main"))!.status).not.toBe("stopped");
      if (host === "127.0.0.1") {
        // Cookies ignore ports: the attacker's server got the session cookie. Alone it is
        // no credential, for reads or anything else.
        const cookie = evilSaw.find((c) => c.includes("holon_console="));
        expect(cookie).toBeDefined();
        const replay = await fetch(`${rt.url}/ui/api/overview`, { headers: { cookie: cookie! } });
        expect(replay.status).toBe(403);
        const drive = await fetch(`${rt.url}/control/agents/main/control`, {
          method: "POST",
          headers: { cookie: cookie!, "content-type": "application/json" },
          body: JSON.stringify({ action: "stop" }),
        });
        expect(drive.status).toBe(403);
      }
    });
  }
});

describe.skipIf(!HAVE_CHROMIUM)("hostile transcripts", () => {
  it("markup, a javascript: link and 2 MB on one line render as inert text; the page stays usable", async () => {
    const hostile = [
      `<script>window.pwned = "script"</script>`,
      `<img src=x onerror="window.pwned='img'">`,
      `[click me](javascript:window.pwned='link') <a href="javascript:window.pwned='a'">a</a>`,
    ].join(" ");
    const huge = "A".repeat(2 * 1024 * 1024);
    fake.enqueue(reply.text(hostile), reply.text(huge));
    for (const text of [hostile, "now the long one"]) {
      const r = await rt.req("POST", "/control/agents/main/prompt", { text });
      expect(r.status).toBe(202);
    }
    await waitFor(
      async () =>
        (await rt.host.store.messages.pendingCount("main")) === 0 &&
        !(await rt.host.store.agents.get("main"))!.current_run_id &&
        fake.pending() === 0,
      { what: "both turns", timeoutMs: 20_000 },
    );
    await page.goto(`${rt.url}/ui/#/agent/main`);
    await page.locator('[data-testid="live"]', { hasText: "live" }).waitFor();
    const row = page.locator(".vrow", { hasText: "<script>" }).first();
    await row.waitFor();
    expect(await row.textContent()).toContain(`<img src=x onerror=`);
    const dom = await page.evaluate(() => {
      const d = (globalThis as any).document;
      return {
        pwned: (globalThis as any).pwned ?? null,
        scripts: [...d.querySelectorAll("script")].map((s: any) => s.src),
        imgs: d.querySelectorAll("#root img").length,
        jsLinks: d.querySelectorAll('a[href^="javascript:"]').length,
        longest: Math.max(
          ...[...d.querySelectorAll(".vrow")].map((r: any) => r.textContent.length),
        ),
      };
    });
    expect(dom.pwned).toBeNull();
    // Only the console's own files: no inline script, none from elsewhere.
    expect(dom.scripts.length).toBeGreaterThan(0);
    expect(dom.scripts.every((s: string) => s.startsWith(`${rt.url}/ui/assets/`))).toBe(true);
    expect(dom.imgs).toBe(0);
    expect(dom.jsLinks).toBe(0);
    // The 2 MB line is cut in its row; opening it shows a bounded part, and the page answers.
    expect(dom.longest).toBeLessThan(2_000);
    await page.locator(".vrow", { hasText: "AAAA" }).first().locator("button").click();
    const detail = await page.locator("aside.detail").textContent();
    expect(detail!.length).toBeLessThan(250_000);
    await page.selectOption("select", "info");
    await page.selectOption("select", "debug");
    await row.click();
    expect(await page.evaluate(() => (globalThis as any).pwned ?? null)).toBeNull();
    await screenshot(page, "hostile-transcript");
  }, 60_000);
});
