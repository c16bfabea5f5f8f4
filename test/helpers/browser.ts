// A real browser for the console tests: Debian's chromium driven by playwright-core (no
// browser download), headless, with a fresh profile and everything that would reach for
// the network turned off (without those flags Chromium stalls on a closed network). One
// browser per test file. Where chromium is missing the tests skip with one line, except
// under CI, where they fail: CI installs it (.ci/run).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { REPO_ROOT, startRuntime, tempHome, type TestRuntime } from "./home.ts";
import { configureFakeProvider } from "./provider.ts";
import type { FakeProvider } from "../fake-provider/server.ts";

export const CHROMIUM = process.env.HOLON_TEST_CHROMIUM ?? "/usr/bin/chromium";
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
if (!HAVE_CHROMIUM && process.env.CI) {
  throw new Error(`the console's browser tests need ${CHROMIUM} (apt-get install chromium)`);
}
if (!HAVE_CHROMIUM) process.stderr.write(`console browser tests skipped: no ${CHROMIUM}\n`);

/** Screenshots of each page, kept as test artifacts (gitignored). */
export const ARTIFACTS = join(REPO_ROOT, "test-artifacts", "console");

/** One browser: a persistent context on a fresh profile (one cookie jar, like a person's). */
export type TestBrowser = { context: BrowserContext; profile: string; close(): Promise<void> };

export async function launchBrowser(): Promise<TestBrowser> {
  const profile = mkdtempSync(join(tmpdir(), "holon-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-default-apps",
      "--disable-extensions",
    ],
  });
  return {
    context,
    profile,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function newPage(b: TestBrowser): Promise<{ page: Page }> {
  return { page: await b.context.newPage() };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

/**
 * The console tests' common setup, once per test file: a host on a fresh home with the fake
 * provider configured as a user would, and one browser with one page, started side by side.
 */
export type ConsoleSetup = {
  rt: TestRuntime;
  browser: TestBrowser;
  page: Page;
  close(): Promise<void>;
};

export async function openConsole(fake: FakeProvider): Promise<ConsoleSetup> {
  const home = tempHome();
  await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
  const [rt, browser] = await Promise.all([startRuntime({ home }), launchBrowser()]);
  const page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  return {
    rt,
    browser,
    page,
    async close() {
      await browser.close();
      await rt.close();
    },
  };
}

/** Log the page in as `holon console` would (a fresh one-time link) and wait for the list. */
export async function logIn(page: Page, rt: Parameters<typeof loginLink>[0]): Promise<void> {
  await page.goto(await loginLink(rt));
  await page.locator('tr[data-agent="main"]').waitFor();
}

/** A one-time login link, as `holon console --json` would print it. */
export async function loginLink(rt: {
  req(m: string, p: string, b?: unknown): Promise<{ status: number; json: any }>;
}): Promise<string> {
  const r = await rt.req("POST", "/control/console/login-link", {});
  if (r.status !== 200) throw new Error(`login link: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.url as string;
}

const AXE_SOURCE = readFileSync(join(REPO_ROOT, "node_modules/axe-core/axe.min.js"), "utf8");

/** Run axe-core in the page; the serious and critical violations, as short lines. */
export async function axeViolations(page: Page): Promise<string[]> {
  // axe-core is evaluated through the DevTools protocol: the page's CSP (rightly) refuses
  // any script tag that is not its own.
  await page.evaluate(AXE_SOURCE);
  const result = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe;
    return axe.run();
  })) as {
    violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[];
  };
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`,
    );
}
