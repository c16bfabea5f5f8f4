// The web console in a real browser (Debian's chromium through playwright-core): log in
// through the one-time link, watch the agents page change when a scripted turn runs, send
// a prompt and watch the reply come in, pause and resume, reveal a masked trigger URL, stop
// a task, answer an ask, open the usage chart;
// a screenshot of each page is kept under test-artifacts/console/, and axe-core finds no
// serious or critical accessibility violation on any of them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { waitFor, type TestRuntime } from "./helpers/home.ts";
import { useFakeProvider } from "./helpers/provider.ts";
import { reply } from "./fake-provider/server.ts";
import {
  HAVE_CHROMIUM,
  axeViolations,
  loginLink,
  screenshot,
  openConsole,
  type ConsoleSetup,
} from "./helpers/browser.ts";
import { executionBinding } from "../src/workspace/roots.ts";
import { TaskService } from "../src/tasks/service.ts";

const fake = useFakeProvider();
let c: ConsoleSetup;
let rt: TestRuntime;
let page: Page;

beforeAll(async () => {
  if (!HAVE_CHROMIUM) return;
  c = await openConsole(fake);
  ({ rt, page } = c);
});
afterAll(() => c?.close());

const idle = (agent = "main") =>
  waitFor(
    async () =>
      (await rt.host.store.messages.pendingCount(agent)) === 0 &&
      !(await rt.host.store.agents.get(agent))!.current_run_id,
    { what: "an idle agent", timeoutMs: 20_000 },
  );

describe.skipIf(!HAVE_CHROMIUM)("the web console in a browser", () => {
  it("logs in through the one-time link; the agents page updates when a scripted turn runs", async () => {
    await page.goto(await loginLink(rt));
    const row = page.locator('tr[data-agent="main"]');
    await row.waitFor();
    // The secret left the address bar before anything else.
    expect(page.url()).not.toContain("login=");
    expect(await row.locator('[data-testid="cost"]').textContent()).toContain("(0 tok)");

    fake.enqueue(reply.text("done with it", { input_tokens: 1200, output_tokens: 34 }));
    const sent = await rt.req("POST", "/control/agents/main/prompt", { text: "do the thing" });
    expect(sent.status).toBe(202);
    await idle();
    await row.locator('[data-testid="cost"]', { hasText: "(1234 tok)" }).waitFor();
    await screenshot(page, "agents");
    expect(await axeViolations(page)).toEqual([]);
  });

  it("sends a prompt from the composer and shows the reply as it comes in", async () => {
    await page.goto(`${rt.url}/ui/#/agent/main`);
    await page.locator('[data-testid="live"]', { hasText: "live" }).waitFor();
    fake.enqueue(reply.text("Hello from the fake model, streamed to the console"));
    await page.fill("#prompt", "say hello");
    await page.click('button[type="submit"]');
    await page.getByText("Hello from the fake model", { exact: false }).first().waitFor();
    await idle();
    const msg = (await rt.host.store.messages.withStatus("main", "processed")).find(
      (m) => m.body.type === "text" && m.body.text === "say hello",
    );
    expect(msg?.delivery_surface).toBe("web_console");
    expect(msg?.admission_context).toBe("control_authenticated");

    // The keyboard walks the rows in their visual order (rows are reused in place, so their
    // order in the page is not): the list is one tab stop, End and the arrows move the focus.
    const focusedRow = () =>
      page.evaluate(() => {
        const d = (globalThis as any).document;
        const row = d.activeElement?.closest("[data-index]");
        return row ? { index: Number(row.dataset.index), text: row.textContent as string } : null;
      });
    await page.getByRole("list", { name: "Conversation" }).focus();
    await page.keyboard.press("End");
    const last = await focusedRow();
    expect(last).not.toBeNull();
    const count = Number(/(\d+) items/.exec((await page.locator(".bar").textContent())!)?.[1]);
    expect(last!.index).toBe(count - 1);
    await page.keyboard.press("ArrowUp");
    expect((await focusedRow())!.index).toBe(count - 2);
    await page.keyboard.press("Home");
    expect((await focusedRow())!.index).toBe(0);
    await page.keyboard.press("End");
    await page.keyboard.press("Enter");
    await page.locator("aside.detail h2").waitFor();
    await screenshot(page, "agent");
    expect(await axeViolations(page)).toEqual([]);

    // Pause and resume from the composer reach the agent's lifecycle.
    await page.getByRole("button", { name: "Pause" }).click();
    await waitFor(async () => (await rt.host.store.agents.get("main"))!.status === "paused", {
      what: "the agent to pause",
    });
    await page.getByRole("button", { name: "Resume" }).click();
    await waitFor(async () => (await rt.host.store.agents.get("main"))!.status !== "paused", {
      what: "the agent to resume",
    });
  });

  it("keeps the external trigger's URL masked until revealed", async () => {
    await page.goto(`${rt.url}/ui/#/agent/main/timers`);
    const url = page.locator('[data-testid="trigger-url"]');
    await url.waitFor();
    expect(await url.textContent()).toContain("hidden");
    expect(await page.content()).not.toMatch(/callbacks\/wake\/[A-Za-z0-9_-]{16,}/);
    await page.getByRole("button", { name: "Reveal secret URL" }).click();
    await page.locator('[data-testid="trigger-url"]', { hasText: "/callbacks/wake/" }).waitFor();
    await screenshot(page, "timers");
    expect(await axeViolations(page)).toEqual([]);
  });

  it("shows a task's live output and stops it from the tasks tab", async () => {
    const started = await rt.req("POST", "/control/agents/main/tasks", {
      cmd: "echo first-line-of-output; sleep 60",
      summary: "a long sleep",
    });
    expect(started.status, JSON.stringify(started.json)).toBeLessThan(300);
    const taskId = started.json.task.task_id as string;
    await page.goto(`${rt.url}/ui/#/agent/main/tasks`);
    const row = page.locator(`tr[data-task="${taskId}"]`);
    await row.locator("button.link").click();
    await page
      .locator('[data-testid="task-output"]', { hasText: "first-line-of-output" })
      .waitFor();
    await row.locator("button.danger").click();
    await waitFor(
      async () => {
        const t = await rt.req("GET", `/agents/main/tasks/${taskId}`);
        return !["queued", "running", "cancelling"].includes(t.json.task.status);
      },
      { what: "the task to stop", timeoutMs: 15_000 },
    );
    await page.waitForFunction((id) => {
      const s = (globalThis as any).document.querySelector(
        `tr[data-task="${id}"] [data-testid="task-status"]`,
      );
      return s && !["queued", "running", "cancelling"].includes(s.textContent ?? "");
    }, taskId);
    await screenshot(page, "tasks");
    expect(await axeViolations(page)).toEqual([]);
  });

  it("answers an ask with a reason", async () => {
    const ask = await rt.host.services.asks.open({
      agent_id: "main",
      kind: "budget",
      source: "budget",
      scope: "agent",
      about: "Daily token budget spent",
      detail: "main spent its daily budget.",
      options: ["raise", "wait"],
    });
    await page.goto(`${rt.url}/ui/#/asks`);
    const card = page.locator(`li[data-ask="${ask.id}"]`);
    await card.waitFor();
    await screenshot(page, "asks");
    expect(await axeViolations(page)).toEqual([]);
    await card.getByLabel("wait").check();
    await card.getByLabel("Reason").fill("not today");
    await card.getByRole("button", { name: "Answer" }).click();
    await waitFor(async () => (await rt.host.services.asks.get(ask.id)).state === "decided", {
      what: "the ask to be decided",
    });
    const decided = await rt.host.services.asks.get(ask.id);
    expect(decided.decision).toBe("wait");
    expect(decided.reason).toBe("not today");
  });

  it("opens the usage chart", async () => {
    await page.goto(`${rt.url}/ui/#/usage`);
    const chart = page.locator('[data-testid="usage-chart"]');
    await chart.waitFor();
    expect(await chart.locator("rect").count()).toBeGreaterThan(0);
    expect(await page.locator('[data-testid="usage-table"]').textContent()).toContain("main");
    await page.selectOption("select >> nth=0", "model");
    await page.locator('[data-testid="usage-table"]', { hasText: "fake/test-model" }).waitFor();
    await screenshot(page, "usage");
    expect(await axeViolations(page)).toEqual([]);
  });

  it("shows work items with their record, and the children tab", async () => {
    // Paused, so the new item starts no turn (the fake model has nothing scripted).
    expect((await rt.req("POST", "/control/agents/main/control", { action: "pause" })).status).toBe(
      200,
    );
    const w = await rt.req("POST", "/control/agents/main/work-items", {
      objective: "migrate the CI to GitHub Actions",
    });
    expect(w.status, JSON.stringify(w.json)).toBeLessThan(300);
    await page.goto(`${rt.url}/ui/#/agent/main/work`);
    await page.getByRole("button", { name: "migrate the CI to GitHub Actions" }).click();
    await page.locator("aside.detail dl.fields", { hasText: "objective" }).waitFor();
    await screenshot(page, "work");
    expect(await axeViolations(page)).toEqual([]);
    await page.goto(`${rt.url}/ui/#/agent/main/children`);
    await page.getByText("No children.").waitFor();
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe.skipIf(!HAVE_CHROMIUM)("a private child in the console", () => {
  it("shows its work items, tasks and timers through the /control twins, and stops its task", async () => {
    const spawned = await rt.host.services.agentPlane.spawn({
      parent_agent_id: "main",
      preset: "private_child",
      initial_message: "look around",
      workspace_mode: "inherit",
      context_mode: "fresh",
    });
    const child = spawned.agent_id;
    // Paused before its first turn: it stays a live private child, its job pending.
    await rt.host.lifecycle.control(child, "pause");
    await rt.host.services.work.enqueue(child, "audit the child's corner of the repo");
    const task = await rt.host.tasks.start({
      agent_id: child,
      cmd: "echo child-task-says-hi; sleep 60",
      workdir: executionBinding(await rt.host.agents.get(child)).cwd,
      shell: TaskService.shellOr(undefined),
      login: false,
      tty: false,
      accepts_input: false,
      terminal_reentry: false,
      summary: "the child's long sleep",
    });
    await rt.host.services.timers.create(child, {
      summary: "child check-in",
      duration_ms: 3_600_000,
    });

    // The public reads keep it hidden, as before; the twins need the operator.
    for (const path of ["tasks", "timers", "work-items", `tasks/${task.id}/output`]) {
      expect((await rt.req("GET", `/agents/${child}/${path}`)).status, path).toBe(404);
      const anon = await rt.req("GET", `/control/agents/${child}/${path}`, undefined, {
        authorization: "",
      });
      expect(anon.status, path).toBe(401);
      expect((await rt.req("GET", `/control/agents/${child}/${path}`)).status, path).toBe(200);
    }

    // The operator's other per-agent routes reach the private child too: its usage and a
    // task's input (the public usage route keeps it hidden).
    expect((await rt.req("GET", `/agents/${child}/usage/rounds`)).status).toBe(404);
    for (const path of ["usage", "usage/rounds"]) {
      const anon = await rt.req("GET", `/control/agents/${child}/${path}`, undefined, {
        authorization: "",
      });
      expect(anon.status, path).toBe(401);
      expect((await rt.req("GET", `/control/agents/${child}/${path}`)).status, path).toBe(200);
    }
    const reader = await rt.host.tasks.start({
      agent_id: child,
      cmd: "read line; echo got:$line",
      workdir: executionBinding(await rt.host.agents.get(child)).cwd,
      shell: TaskService.shellOr(undefined),
      login: false,
      tty: false,
      accepts_input: true,
      terminal_reentry: false,
      summary: "the child's reader",
    });
    const fed = await rt.req("POST", `/control/agents/${child}/tasks/${reader.id}/input`, {
      input: "hello-child\n",
      close_input: true,
    });
    expect(fed.status).toBe(200);
    expect(fed.json.accepted_input).toBe(true);
    await waitFor(async () => (await rt.host.store.tasks.get(reader.id))!.status === "completed", {
      what: "the child's reader to finish",
      timeoutMs: 15_000,
    });

    const enc = encodeURIComponent(child);
    await page.goto(`${rt.url}/ui/#/agent/${enc}/work`);
    await page.getByRole("button", { name: "audit the child's corner of the repo" }).click();
    await page.locator("aside.detail dl.fields", { hasText: "objective" }).waitFor();
    expect(await page.locator('[role="alert"]').count()).toBe(0);

    await page.goto(`${rt.url}/ui/#/agent/${enc}/timers`);
    await page.locator('[data-testid="timers"]', { hasText: "child check-in" }).waitFor();
    expect(await page.locator('[role="alert"]').count()).toBe(0);

    await page.goto(`${rt.url}/ui/#/agent/${enc}/tasks`);
    const row = page.locator(`tr[data-task="${task.id}"]`);
    await row.locator("button.link").click();
    await page.locator('[data-testid="task-output"]', { hasText: "child-task-says-hi" }).waitFor();
    await row.locator("button.danger").click();
    await waitFor(
      async () =>
        !["queued", "running", "cancelling"].includes(
          (await rt.host.store.tasks.get(task.id))!.status,
        ),
      {
        what: "the child's task to stop",
        timeoutMs: 15_000,
      },
    );
    await row
      .locator('[data-testid="task-status"]', { hasText: /^(cancelled|failed|completed)$/ })
      .waitFor();
    expect(await page.locator('[role="alert"]').count()).toBe(0);
  });
});
