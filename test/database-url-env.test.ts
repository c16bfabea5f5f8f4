// A host whose records are in Postgres holds the database URL in its environment; a model
// that runs `env` must see neither the URL nor its password, however the user spread it
// (HOLON_DATABASE_URL, DATABASE_URL, PGPASSWORD, another variable with the same password),
// even with the URL variables in the allowlist. The secret reaches no provider request, no
// file of the home and nothing the host prints. And the URL's sslmode reaches the
// connection: `sslmode=require` against the tests' server (which has no TLS) is refused by
// the server, with the password filled in from a credential profile or not.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, spawnServe, tempHome, waitFor } from "./helpers/home.ts";
import { reply } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { freshDatabaseUrl, psqlQuery, requirePostgres } from "./helpers/postgres.ts";
import { useSpawnHelper } from "./helpers/spawn-helper.ts";

useSpawnHelper();

const pg = requirePostgres();
const fake = useFakeProvider();

// The tests' server trusts local connections, so a password is accepted and ignored: enough
// to follow it everywhere the host might leak it.
const SECRET = "pg-5ecret-pw-7f3a9c21";

/** `url` (a test database) with a password and a query of our own. */
function withSecret(url: string, query: string, password: string | null = SECRET): string {
  const u = new URL(url);
  if (password !== null) u.password = password;
  u.search = query;
  return u.toString();
}

/** Every file under `dir`, as latin1 text (so any byte sequence compares). */
function allFiles(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push({ path: p, text: readFileSync(p).toString("latin1") });
    }
  };
  walk(dir);
  return out;
}

function childrenOf(pid: number): number[] {
  try {
    return execFileSync("ps", ["-o", "pid=", "--ppid", String(pid)], { encoding: "utf8" })
      .split("\n")
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

describe.skipIf(!pg)("the database URL and commands", () => {
  it("a model running env on a Postgres home sees neither the URL nor its password", async () => {
    const home = tempHome();
    const env = { HOLON_HOME: home };
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    // Allowlisting the URL's variables does not pass them: the URL is withheld by name and by value.
    const allow = await runCli(
      ["config", "set", "runtime.command_env_allow", '["HOLON_DATABASE_URL","DATABASE_URL"]'],
      { env },
    );
    expect(allow.code, allow.stderr).toBe(0);
    const database = freshDatabaseUrl();
    const url = withSecret(database, "?sslmode=disable&application_name=holon-test");

    const before = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "ExecCommand", arguments: { cmd: "env" }, call_id: "c1" }]),
      reply.text("ran env"),
    );
    const s = await spawnServe(home, [], {
      HOLON_DATABASE_URL: url,
      DATABASE_URL: url,
      PGPASSWORD: SECRET,
      OTHER_DSN: `postgresql://app:${SECRET}@replica.internal/app`,
      PLAIN_VAR: "plain-value-7c1",
    });
    try {
      const prompt = await runCli(["prompt", "show me the environment"], { env });
      expect(prompt.code, prompt.stderr).toBe(0);
      await waitFor(() => fake.requests.length >= before + 2, {
        what: "the tool result round",
        timeoutMs: 30_000,
      });
      const wire = fake.requests
        .slice(before)
        .map((r) => r.raw)
        .join("\n");
      // The command ran, and its output (the environment) went back to the model.
      expect(wire).toContain("PLAIN_VAR=plain-value-7c1");
      for (const name of ["HOLON_DATABASE_URL=", "DATABASE_URL=", "PGPASSWORD=", "OTHER_DSN="])
        expect(wire, name).not.toContain(name);

      // The host really keeps its records in that database.
      expect(psqlQuery(database, "SELECT count(*) FROM agents WHERE agent_id = 'main'")).toBe("1");

      const status = await (await fetch(`${s.url}/status`, { headers: s.auth })).text();
      // The spawn helper and its spares start from the scrubbed environment too.
      const helpers = childrenOf(s.proc.pid!).filter((pid) =>
        readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("spawner-helper"),
      );
      const environs = [...helpers, ...helpers.flatMap(childrenOf)]
        .filter((pid) => existsSync(`/proc/${pid}/environ`))
        .map((pid) => readFileSync(`/proc/${pid}/environ`, "latin1"));
      expect(environs.join("\n")).toContain("PLAIN_VAR=plain-value-7c1");

      const places: [string, string][] = [
        ["provider requests", wire],
        ["status", status],
        ["helper and spares", environs.join("\n")],
        ["the prompt's output", prompt.stdout + prompt.stderr],
        ["serve's stderr", s.stderr()],
        ...allFiles(home).map((f) => [f.path, f.text] as [string, string]),
      ];
      for (const [where, text] of places) {
        expect(text.includes(SECRET), `the password leaked into ${where}`).toBe(false);
      }
      expect(environs.join("\n")).not.toContain("HOLON_DATABASE_URL");
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
  });

  it("the URL's sslmode reaches the connection, with the password from a credential profile", async () => {
    const home = tempHome();
    const env = { HOLON_HOME: home };
    const stored = await runCli(
      ["config", "credentials", "set", "postgres:holon", "--kind", "api_key", "--stdin"],
      { env, input: `${SECRET}\n` },
    );
    expect(stored.code, stored.stderr).toBe(0);
    const database = freshDatabaseUrl();
    const setUrl = async (query: string) => {
      const set = await runCli(
        [
          "config",
          "set",
          "store.database_url",
          withSecret(database, query, null),
          "store.database_credential",
          "postgres:holon",
        ],
        { env },
      );
      expect(set.code, set.stderr).toBe(0);
    };

    // require: TLS, which this server does not offer. The connection is refused for it, and
    // the URL in the message has the profile's password masked.
    await setUrl("?sslmode=require");
    const refused = await runCli(["serve", "--port", "0", "--home", home], {
      env: { HOLON_DATABASE_URL: "" },
      timeoutMs: 45_000,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/does not support SSL/);
    expect(refused.stderr).toContain("postgres:***@");
    expect(refused.stderr).not.toContain(SECRET);

    // The variable's URL is the one used, with its own sslmode.
    const viaEnv = await runCli(["serve", "--port", "0", "--home", home], {
      env: { HOLON_DATABASE_URL: withSecret(database, "?sslmode=verify-full") },
      timeoutMs: 45_000,
    });
    expect(viaEnv.code).toBe(1);
    expect(viaEnv.stderr).toMatch(/does not support SSL/);
    expect(viaEnv.stderr).not.toContain(SECRET);

    // disable: plain TCP, and the host starts on the database.
    await setUrl("?sslmode=disable");
    const s = await spawnServe(home, [], { HOLON_DATABASE_URL: "" });
    try {
      expect(psqlQuery(database, "SELECT count(*) FROM agents WHERE agent_id = 'main'")).toBe("1");
      expect(s.stderr()).not.toContain(SECRET);
    } finally {
      const exited = new Promise((r) => s.proc.once("exit", r));
      s.proc.kill("SIGTERM");
      await exited;
    }
    for (const f of allFiles(home).filter((f) => !f.path.endsWith("credentials.json")))
      expect(f.text.includes(SECRET), `the password leaked into ${f.path}`).toBe(false);
  });
});
