// The web console's auth over real HTTP (no browser): the one-time login link, the session
// cookie and its synchronizer CSRF token, logout, expiry, restarts, the /ui/ headers, and the
// guard's rule that only a top-level navigation to a console page may come from another
// site. The browser versions of the attacks are in console-attacks.test.ts.
import { statSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConsoleSessions } from "../src/http/console-sessions.ts";
import { CONSOLE_CSP } from "../src/http/routes-ui.ts";
import { rawRequest } from "./helpers/http.ts";
import { cleanupHomes, runCli, startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";

afterAll(() => cleanupHomes());

type Res = { status: number; headers: Headers; json: any; text: string };
async function send(
  rt: TestRuntime,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Res> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] = "application/json";
  }
  const res = await fetch(rt.url + path, {
    method,
    headers,
    redirect: "manual",
    ...(body === undefined ? {} : { body }),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON (a page)
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** node:http, for headers fetch would set itself (it always sends its own Sec-Fetch-Mode). */
function raw(
  rt: TestRuntime,
  method: string,
  path: string,
  opts: { headers?: Record<string, string> },
) {
  return rawRequest({ url: rt.url }, method, path, { headers: opts.headers ?? {} });
}

/** Mint a link with the control token and spend it: the cookie and CSRF token a browser gets. */
async function logIn(rt: TestRuntime) {
  const link = await rt.req("POST", "/control/console/login-link", {});
  expect(link.status).toBe(200);
  const secret = /#login=([A-Za-z0-9_-]+)$/.exec(link.json.url)![1]!;
  const r = await send(rt, "POST", "/ui/session", { body: { secret } });
  expect(r.status, r.text).toBe(200);
  const setCookie = r.headers.get("set-cookie")!;
  const cookie = setCookie.split(";")[0]!;
  return { secret, cookie, csrf: r.json.csrf_token as string, setCookie };
}

describe("console login", () => {
  it("serves /ui/ without a credential, with the console's CSP and no framing", async () => {
    const rt = await startRuntime();
    try {
      const page = await send(rt, "GET", "/ui/");
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
      expect(CONSOLE_CSP).toBe(
        "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'",
      );
      expect(page.headers.get("x-frame-options")).toBe("DENY");
      expect(page.text).toContain('src="/ui/assets/app.js"');
      // The boot script runs first; every script the first screen needs is preloaded, each
      // is a file of the console's own (no inline script: the CSP would refuse it anyway).
      expect(page.text.indexOf('src="/ui/assets/boot.js"')).toBeGreaterThan(0);
      expect(page.text.indexOf('src="/ui/assets/boot.js"')).toBeLessThan(
        page.text.indexOf('src="/ui/assets/app.js"'),
      );
      const preloaded = [...page.text.matchAll(/rel="modulepreload" href="([^"]+)"/g)].map(
        (m) => m[1]!,
      );
      expect(preloaded).toEqual(
        expect.arrayContaining(["/ui/assets/boot.js", "/ui/assets/app.js"]),
      );
      for (const href of preloaded) expect((await send(rt, "GET", href)).status, href).toBe(200);
      expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      const js = await send(rt, "GET", "/ui/assets/app.js");
      expect(js.status).toBe(200);
      expect(js.headers.get("content-type")).toContain("text/javascript");
      expect(js.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
      const redirect = await send(rt, "GET", "/ui");
      expect(redirect.status).toBe(302);
      expect(redirect.headers.get("x-frame-options")).toBe("DENY");
      // No path escapes the bundle, and the API part of /ui/ is not open.
      expect((await send(rt, "GET", "/ui/assets/..%2F..%2Fpackage.json")).status).toBe(404);
      const refused = await send(rt, "GET", "/ui/api/overview");
      expect(refused.status).toBe(401);
      // Refused before routing, the answer still carries the console's headers.
      expect(refused.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
      expect(refused.headers.get("x-frame-options")).toBe("DENY");
      expect((await send(rt, "GET", "/ui/session")).status).toBe(401);
    } finally {
      await rt.close();
    }
  });

  it("a login link is minted only for the token's holder, works once, and becomes a cookie + CSRF session", async () => {
    const rt = await startRuntime();
    try {
      const refused = await send(rt, "POST", "/control/console/login-link", { body: {} });
      expect(refused.status).toBe(401);
      const { secret, cookie, csrf, setCookie } = await logIn(rt);
      expect(setCookie).toMatch(
        /^holon_console=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/,
      );
      expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);

      // Used: refused, and nothing of the secret is in the answer.
      const again = await send(rt, "POST", "/ui/session", { body: { secret } });
      expect(again.status).toBe(401);
      expect(again.json.error.kind).toBe("login_link_invalid");
      expect(again.text).not.toContain(secret);
      // A made-up secret, and bad bodies: clear errors.
      expect(
        (await send(rt, "POST", "/ui/session", { body: { secret: "x".repeat(43) } })).json.error
          .kind,
      ).toBe("login_link_invalid");
      expect(
        (await send(rt, "POST", "/ui/session", { body: { secret: "x".repeat(500) } })).json.error
          .kind,
      ).toBe("invalid_request");
      expect((await send(rt, "POST", "/ui/session", { body: { nope: 1 } })).status).toBe(400);
      expect(
        (await send(rt, "POST", "/ui/session", { body: { secret, overview: "yes" } })).status,
      ).toBe(400);
      // Asked for, the login's answer carries the first screen too (the console's first
      // request brings the agents list); a refused login carries nothing of it.
      const link = await rt.req("POST", "/control/console/login-link", {});
      const fresh = /#login=([A-Za-z0-9_-]+)$/.exec(link.json.url)![1]!;
      const withOverview = await send(rt, "POST", "/ui/session", {
        body: { secret: fresh, overview: true },
      });
      expect(withOverview.status).toBe(200);
      expect(withOverview.json.overview.agents.map((a: any) => a.agent_id)).toContain("main");
      expect(typeof withOverview.json.overview.cursor).toBe("number");
      const refusedOverview = await send(rt, "POST", "/ui/session", {
        body: { secret: fresh, overview: true },
      });
      expect(refusedOverview.status).toBe(401);
      expect(refusedOverview.json.overview).toBeUndefined();

      // Cookie and token together are a credential for reads and control routes alike.
      const both = { cookie, "x-holon-csrf": csrf };
      const overview = await send(rt, "GET", "/ui/api/overview", { headers: both });
      expect(overview.status).toBe(200);
      expect(overview.json.agents.map((a: any) => a.agent_id)).toContain("main");
      expect((await send(rt, "GET", "/control/asks", { headers: both })).status).toBe(200);
      const who = await send(rt, "GET", "/ui/session", { headers: both });
      expect(who.json.via).toBe("console_session");
      expect(Date.parse(who.json.expires_at)).toBeGreaterThan(Date.now());

      // Either half alone is not.
      const noToken = await send(rt, "GET", "/ui/api/overview", { headers: { cookie } });
      expect(noToken.status).toBe(403);
      expect(noToken.json.error.kind).toBe("csrf_token_invalid");
      const wrongToken = await send(rt, "POST", "/control/agents/main/control", {
        headers: { cookie, "x-holon-csrf": "A".repeat(43) },
        body: { action: "pause" },
      });
      expect(wrongToken.status).toBe(403);
      expect((await rt.host.store.agents.get("main"))!.status).not.toBe("paused");
      const tokenOnly = await send(rt, "GET", "/ui/api/overview", {
        headers: { "x-holon-csrf": csrf },
      });
      expect(tokenOnly.status).toBe(401);
      // A cookie planted by another localhost port (same name, first in the header) does
      // not lock the real session out, and is no credential itself.
      const planted = `holon_console=${"B".repeat(43)}; ${cookie}`;
      expect(
        (
          await send(rt, "GET", "/ui/api/overview", {
            headers: { cookie: planted, "x-holon-csrf": csrf },
          })
        ).status,
      ).toBe(200);

      // The bearer token keeps working for scripts.
      expect((await rt.req("GET", "/ui/api/overview")).status).toBe(200);

      // Logout ends it at once.
      const out = await send(rt, "POST", "/ui/session/logout", { headers: both });
      expect(out.json.ended).toBe(true);
      expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
      expect((await send(rt, "GET", "/ui/api/overview", { headers: both })).status).toBe(401);
    } finally {
      await rt.close();
    }
  });

  it("a prompt through a console session is web_console input, a caller cannot claim the surface", async () => {
    const rt = await startRuntime();
    try {
      const { cookie, csrf } = await logIn(rt);
      const r = await send(rt, "POST", "/control/agents/main/control", {
        headers: { cookie, "x-holon-csrf": csrf },
        body: { action: "pause" },
      });
      expect(r.status).toBe(200);
      const p = await send(rt, "POST", "/control/agents/main/prompt", {
        headers: { cookie, "x-holon-csrf": csrf },
        body: { text: "from the browser" },
      });
      expect(p.status).toBe(202);
      const msg = (await rt.host.store.messages.withStatus("main", "queued")).find(
        (m) => m.id === p.json.message_id,
      )!;
      expect(msg.delivery_surface).toBe("web_console");
      expect(msg.admission_context).toBe("control_authenticated");
      const claimed = await rt.req("POST", "/control/agents/main/prompt", {
        text: "pretend",
        surface: "web_console",
      });
      expect(claimed.status).toBe(400);
    } finally {
      await rt.close();
    }
  });

  it("only a top-level navigation to a console page may come from another site; API and login may not", async () => {
    const rt = await startRuntime();
    try {
      const { cookie, csrf } = await logIn(rt);
      const both = { cookie, "x-holon-csrf": csrf };
      const nav = { "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" };
      for (const site of ["cross-site", "same-site"]) {
        expect(
          (await raw(rt, "GET", "/ui/", { headers: { ...nav, "sec-fetch-site": site } })).status,
        ).toBe(200);
        // The same navigation to the API, or a fetch of the page, or any API call: refused.
        for (const [path, h] of [
          ["/ui/api/overview", { ...nav, "sec-fetch-site": site, ...both }],
          ["/ui/", { "sec-fetch-mode": "cors", "sec-fetch-dest": "empty", "sec-fetch-site": site }],
          [
            "/ui/",
            { "sec-fetch-mode": "navigate", "sec-fetch-dest": "iframe", "sec-fetch-site": site },
          ],
          ["/agents/main/events", { "sec-fetch-site": site, ...both }],
          ["/agents/main/events/stream", { "sec-fetch-site": site, ...both }],
        ] as const) {
          const r = await raw(rt, "GET", path, { headers: h });
          expect(r.status, `${site} ${path} ${JSON.stringify(h)}`).toBe(403);
          expect(r.json.error.kind).toBe("origin_not_allowed");
        }
      }
      // A login post or a control post from another origin: refused before the route.
      const link = await rt.req("POST", "/control/console/login-link", {});
      const secret = /#login=(.+)$/.exec(link.json.url)![1]!;
      const evil = await send(rt, "POST", "/ui/session", {
        headers: { origin: "http://localhost:9999" },
        body: { secret },
      });
      expect(evil.status).toBe(403);
      const drive = await send(rt, "POST", "/control/agents/main/control", {
        headers: { origin: "http://127.0.0.1:1", ...both },
        body: { action: "stop" },
      });
      expect(drive.status).toBe(403);
      expect((await rt.host.store.agents.get("main"))!.status).not.toBe("stopped");
    } finally {
      await rt.close();
    }
  });

  it("sessions end with the host unless console.persist_sessions is on; then they survive a restart", async () => {
    const home = tempHome();
    let rt = await startRuntime({ home });
    let s = await logIn(rt);
    await rt.close();
    rt = await startRuntime({ home });
    try {
      expect(
        (
          await send(rt, "GET", "/ui/api/overview", {
            headers: { cookie: s.cookie, "x-holon-csrf": s.csrf },
          })
        ).status,
      ).toBe(401);
      expect(existsSync(join(home, "run", "console-sessions.json"))).toBe(false);
    } finally {
      await rt.close();
    }
    const set = await runCli(["config", "set", "console.persist_sessions", "true"], {
      env: { HOLON_HOME: home },
    });
    expect(set.code, set.stderr).toBe(0);
    rt = await startRuntime({ home });
    s = await logIn(rt);
    await rt.close();
    const file = join(home, "run", "console-sessions.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = readFileSync(file, "utf8");
    // Only digests are kept: neither the cookie's value nor the token is in the file.
    expect(stored).not.toContain(s.cookie.split("=")[1]!);
    expect(stored).not.toContain(s.csrf);
    rt = await startRuntime({ home });
    try {
      const both = { cookie: s.cookie, "x-holon-csrf": s.csrf };
      expect((await send(rt, "GET", "/ui/api/overview", { headers: both })).status).toBe(200);
    } finally {
      await rt.close();
    }
    // A damaged file logs nobody in and breaks nothing.
    writeFileSync(file, "{not json");
    rt = await startRuntime({ home });
    try {
      expect(
        (
          await send(rt, "GET", "/ui/api/overview", {
            headers: { cookie: s.cookie, "x-holon-csrf": s.csrf },
          })
        ).status,
      ).toBe(401);
    } finally {
      await rt.close();
    }
  });

  it("`holon console --no-open` prints a link that logs a browser in once", async () => {
    const rt = await startRuntime();
    try {
      const out = await runCli(["console", "--no-open"], {
        env: { HOLON_HOME: rt.home, DISPLAY: "" },
      });
      expect(out.code, out.stderr).toBe(0);
      const url = /(http:\/\/\S+#login=[A-Za-z0-9_-]{43})/.exec(out.stdout)![1]!;
      expect(url.startsWith(rt.url + "/ui/")).toBe(true);
      const secret = url.split("#login=")[1]!;
      expect((await send(rt, "POST", "/ui/session", { body: { secret } })).status).toBe(200);
      expect((await send(rt, "POST", "/ui/session", { body: { secret } })).status).toBe(401);
    } finally {
      await rt.close();
    }
  });
});

describe("console sessions (clock driven)", () => {
  const make = () => {
    let now = 1_000_000;
    const s = new ConsoleSessions({
      now: () => now,
      sessionMs: 3_600_000,
      persist: false,
      persistPath: join(tempHome(), "none.json"),
    });
    return { s, advance: (ms: number) => (now += ms) };
  };

  it("a link expires after 60 seconds", () => {
    const { s, advance } = make();
    const fresh = s.mintLink();
    const stale = s.mintLink();
    advance(59_999);
    expect(() => s.redeem(fresh.secret)).not.toThrow();
    advance(2);
    expect(() => s.redeem(stale.secret)).toThrow(/unknown, already used or expired/);
  });

  it("a session expires; an expired one is no credential", () => {
    const { s, advance } = make();
    const opened = s.redeem(s.mintLink().secret);
    expect(s.check([opened.session_id], opened.csrf_token).ok).toBe(true);
    advance(3_600_000);
    expect(s.check([opened.session_id], opened.csrf_token)).toEqual({ ok: false, why: "none" });
    expect(s.size).toBe(0);
  });

  it("only sixteen links wait at once, and the oldest goes first", () => {
    const { s } = make();
    const first = s.mintLink();
    for (let i = 0; i < 16; i++) s.mintLink();
    expect(() => s.redeem(first.secret)).toThrow(/login_link_invalid|expired/);
  });
});
