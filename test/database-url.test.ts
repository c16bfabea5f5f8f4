// The database URL as configuration: where it comes from (HOLON_DATABASE_URL beats
// store.database_url), the password a credential profile fills in, the query (sslmode) kept
// as written, the masking `holon config get/list` applies, the refusal of a URL that is not
// Postgres's, and the scrub that keeps the URL and its password out of every command's
// environment. No server is needed here (test/database-url-env.test.ts runs a host on one).
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, runCli, tempHome } from "./helpers/home.ts";
import {
  DATABASE_URL_ENV,
  databaseSecrets,
  maskDatabaseUrl,
  resolveDatabaseUrl,
  withPassword,
} from "../src/host/database-url.ts";
import { ConfigSource } from "../src/host/config.ts";
import { commandEnvPolicy } from "../src/host/command-policy.ts";
import { BUILTIN_ENV_POLICY, scrubEnv } from "../src/tasks/env.ts";
import { setCredential } from "../src/providers/credentials.ts";
import { HolonError } from "../src/domain/errors.ts";

afterAll(cleanupHomes);

// pg's own parser (a dependency of pg): what the connection will be made with.
const parse = createRequire(import.meta.url)("pg-connection-string").parse as (
  url: string,
) => Record<string, unknown> & { ssl?: unknown };

const PASSWORD = "Pg-5ecret/with:odd@chars%20and&more";
const ENCODED = encodeURIComponent(PASSWORD);

function writeConfig(home: string, config: unknown): void {
  writeFileSync(join(home, "config.json"), JSON.stringify(config));
}

/** A home whose config.json holds `store` and nothing else; no provider variables leak in. */
function homeWith(store?: Record<string, unknown>): string {
  const home = tempHome("holon-test-", { sqlite: true });
  if (store) writeConfig(home, { store });
  return home;
}

function storeCredential(home: string, profile: string, secret: string): void {
  setCredential(join(home, "credentials.json"), profile, "api_key", secret);
}

function caught(fn: () => unknown): HolonError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(HolonError);
    return err as HolonError;
  }
  throw new Error("expected a HolonError");
}

describe("resolveDatabaseUrl", () => {
  it("is null without a URL, reads store.database_url, and HOLON_DATABASE_URL beats it", () => {
    expect(DATABASE_URL_ENV).toBe("HOLON_DATABASE_URL");
    expect(resolveDatabaseUrl(homeWith(), {})).toBeNull();
    expect(resolveDatabaseUrl(homeWith({ database_credential: "db" }), {})).toBeNull();
    const file = "postgres://holon:filepw@db.internal:5432/holon?sslmode=verify-full";
    const env = "postgresql://other:envpw@10.0.0.9/records?sslmode=no-verify";
    const home = homeWith({ database_url: file });
    expect(resolveDatabaseUrl(home, {})).toBe(file);
    expect(resolveDatabaseUrl(home, { HOLON_DATABASE_URL: env })).toBe(env);
    expect(resolveDatabaseUrl(homeWith(), { HOLON_DATABASE_URL: env })).toBe(env);
    // An empty variable is unset, as for the other HOLON_* overrides.
    expect(resolveDatabaseUrl(home, { HOLON_DATABASE_URL: "" })).toBe(file);
    expect(resolveDatabaseUrl(home, { HOLON_DATABASE_URL: "  " })).toBe(file);
  });

  it("fills the password in from the credential profile and keeps the query as written", () => {
    const home = homeWith({
      database_url: "postgres://holon@db.internal:6432/holon?sslmode=require&application_name=h1",
      database_credential: "postgres:holon",
    });
    storeCredential(home, "postgres:holon", PASSWORD);
    const url = resolveDatabaseUrl(home, {})!;
    expect(url).toBe(
      `postgres://holon:${ENCODED}@db.internal:6432/holon?sslmode=require&application_name=h1`,
    );
    // What pg makes of it: the password decoded exactly, sslmode and the rest passed on.
    const cfg = parse(url);
    expect(cfg).toMatchObject({
      user: "holon",
      password: PASSWORD,
      host: "db.internal",
      port: "6432",
      database: "holon",
      sslmode: "require",
      application_name: "h1",
    });
    expect(cfg.ssl).toEqual({}); // TLS on, with pg's default (verifying) checks

    // The variable's URL gets the profile's password too (the file still names the profile).
    const fromEnv = resolveDatabaseUrl(home, {
      HOLON_DATABASE_URL: "postgres://holon@db2/holon?sslmode=verify-full",
    })!;
    expect(fromEnv).toBe(`postgres://holon:${ENCODED}@db2/holon?sslmode=verify-full`);
    expect(parse(fromEnv)).toMatchObject({ password: PASSWORD, sslmode: "verify-full" });

    // A URL with a password of its own (in the user part or as a parameter) is used as is.
    const own = "postgres://holon:inline@db/holon?sslmode=disable";
    expect(resolveDatabaseUrl(home, { HOLON_DATABASE_URL: own })).toBe(own);
    const param = "postgres://holon@db/holon?password=inparam&sslmode=no-verify";
    expect(resolveDatabaseUrl(home, { HOLON_DATABASE_URL: param })).toBe(param);

    // A Unix socket URL has no user part to put it in: it becomes a parameter.
    const socket = withPassword("postgres:///holon?host=/run/postgresql&sslmode=disable", PASSWORD);
    expect(parse(socket)).toMatchObject({
      host: "/run/postgresql",
      database: "holon",
      password: PASSWORD,
      sslmode: "disable",
      ssl: false,
    });
  });

  it("what pg does with each sslmode (pg-connection-string 2.x, as shipped with pg 8)", () => {
    const at = (mode: string) => parse(`postgres://u:p@h/d?sslmode=${mode}`).ssl;
    expect(at("disable")).toBe(false); // plain TCP
    expect(at("no-verify")).toEqual({ rejectUnauthorized: false }); // TLS, any certificate
    // require, verify-ca, verify-full (and prefer): TLS with the certificate and host name
    // verified against the system CAs (or sslrootcert); pg 8 treats them all as verify-full.
    for (const mode of ["require", "verify-ca", "verify-full", "prefer"])
      expect(at(mode), mode).toEqual({});
    // libpq's meaning of require (TLS without verification) only with uselibpqcompat=true.
    expect(parse("postgres://u:p@h/d?sslmode=require&uselibpqcompat=true").ssl).toEqual({
      rejectUnauthorized: false,
    });
    expect(parse("postgres://u:p@h/d").ssl).toBeUndefined(); // none: PGSSLMODE, else plain
  });

  it("refuses a URL that is not Postgres's with config_invalid, never quoting it", () => {
    for (const bad of [
      "mysql://holon:pw-NOTSHOWN@db/holon",
      "holon:pw-NOTSHOWN@db/holon",
      "postgres://holon:pw-NOTSHOWN@db:notaport/holon",
    ]) {
      const e = caught(() => resolveDatabaseUrl(homeWith(), { HOLON_DATABASE_URL: bad }));
      expect(e.kind).toBe("config_invalid");
      expect(e.message).toContain("HOLON_DATABASE_URL");
      expect(`${e.message} ${e.hint}`).not.toContain("NOTSHOWN");
      // Hand-written into config.json: the same refusal, naming the key.
      const f = caught(() => resolveDatabaseUrl(homeWith({ database_url: bad }), {}));
      expect(f.kind).toBe("config_invalid");
      expect(f.message).toContain("store.database_url");
      expect(`${f.message} ${f.hint}`).not.toContain("NOTSHOWN");
    }
    // A profile that is named but not stored.
    const missing = caught(() =>
      resolveDatabaseUrl(
        homeWith({ database_url: "postgres://u@h/d", database_credential: "x" }),
        {},
      ),
    );
    expect(missing.kind).toBe("config_invalid");
    expect(missing.hint).toContain("holon config credentials set x");
  });

  it("a config.json that does not parse is refused when it names a database, else ignored", () => {
    const home = tempHome("holon-test-", { sqlite: true });
    writeFileSync(
      join(home, "config.json"),
      '{"store": {"database_url": "postgres://u:pw-NOTSHOWN@h/d" oops}}',
    );
    const e = caught(() => resolveDatabaseUrl(home, {}));
    expect(e.kind).toBe("config_invalid");
    expect(e.message).not.toContain("NOTSHOWN");
    // The variable alone still says which database.
    expect(resolveDatabaseUrl(home, { HOLON_DATABASE_URL: "postgres://u@h/d" })).toBe(
      "postgres://u@h/d",
    );
    const plain = tempHome("holon-test-", { sqlite: true });
    writeFileSync(join(plain, "config.json"), "{ not json");
    expect(resolveDatabaseUrl(plain, {})).toBeNull();
  });
});

describe("masking", () => {
  it("keeps the URL's shape and drops every password", () => {
    expect(maskDatabaseUrl("postgres://holon:s3cret@db:5432/holon?sslmode=require")).toBe(
      "postgres://holon:***@db:5432/holon?sslmode=require",
    );
    expect(maskDatabaseUrl("postgres://holon@db/holon?sslmode=verify-full")).toBe(
      "postgres://holon@db/holon?sslmode=verify-full",
    );
    expect(
      maskDatabaseUrl("postgresql://u@h/d?password=p1&sslmode=disable&sslpassword=p2&x=password"),
    ).toBe("postgresql://u@h/d?password=***&sslmode=disable&sslpassword=***&x=password");
    expect(maskDatabaseUrl(`postgres://u:${ENCODED}@h/d`)).toBe("postgres://u:***@h/d");
    expect(maskDatabaseUrl("not a url with pw-NOTSHOWN")).not.toContain("NOTSHOWN");
  });
});

describe("holon config with a database URL", () => {
  /** `holon config …` against `home`, with no HOLON_* variable of the machine leaking in. */
  async function holon(home: string, args: string[], env: Record<string, string> = {}) {
    const clean: Record<string, string> = {};
    for (const k of Object.keys(process.env)) if (k.startsWith("HOLON_")) clean[k] = "";
    const r = await runCli(["config", ...args], { env: { ...clean, HOLON_HOME: home, ...env } });
    return { ...r, all: r.stdout + r.stderr };
  }
  const url = `postgres://holon:${ENCODED}@db.internal:5432/holon?sslmode=require`;
  const masked = "postgres://holon:***@db.internal:5432/holon?sslmode=require";

  it("set, get and list show the URL with its password masked", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    const set = await holon(home, ["set", "store.database_url", url]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain(masked);
    expect(JSON.parse(readFileSync(join(home, "config.json"), "utf8"))).toEqual({
      store: { database_url: url },
    });
    const outputs = [set.all];
    const get = await holon(home, ["get", "store.database_url"]);
    expect(get.stdout.trim()).toBe(masked);
    const json = await holon(home, ["get", "store.database_url", "--json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      key: "store.database_url",
      value: masked,
      source: "config",
    });
    const list = await holon(home, ["list"]);
    expect(list.stdout).toMatch(/store\.database_url\s+postgres:\/\/holon:\*\*\*@db\.internal/);
    const listJson = JSON.parse((await holon(home, ["list", "--json"])).stdout);
    expect(listJson.values).toContainEqual({
      key: "store.database_url",
      value: masked,
      source: "config",
    });
    // The variable overrides the file, and is masked the same way.
    const env = await holon(home, ["get", "store.database_url", "--json"], {
      HOLON_DATABASE_URL: "postgresql://ops:env-5ecret-pw@10.1.2.3/holon?sslmode=verify-full",
    });
    expect(JSON.parse(env.stdout)).toEqual({
      key: "store.database_url",
      value: "postgresql://ops:***@10.1.2.3/holon?sslmode=verify-full",
      source: "env",
      env: "HOLON_DATABASE_URL",
    });
    const schema = JSON.parse((await holon(home, ["schema", "--json"])).stdout);
    expect(schema.keys).toContainEqual(
      expect.objectContaining({
        key: "store.database_url",
        env: "HOLON_DATABASE_URL",
        secret: true,
      }),
    );
    outputs.push(get.all, json.all, list.all, JSON.stringify(listJson), env.all);
    for (const out of outputs) {
      expect(out).not.toContain(PASSWORD);
      expect(out).not.toContain(ENCODED);
      expect(out).not.toContain("env-5ecret-pw");
    }
  });

  it("the password can come from a credential profile", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    const stored = await runCli(
      ["config", "credentials", "set", "postgres:holon", "--kind", "api_key", "--stdin"],
      { env: { HOLON_HOME: home }, input: `${PASSWORD}\n` },
    );
    expect(stored.code, stored.stderr).toBe(0);
    const set = await holon(home, [
      "set",
      "store.database_url",
      "postgres://holon@db/holon?sslmode=verify-full",
      "store.database_credential",
      "postgres:holon",
    ]);
    expect(set.code, set.stderr).toBe(0);
    expect((await holon(home, ["get", "store.database_credential"])).stdout.trim()).toBe(
      "postgres:holon",
    );
    const url = resolveDatabaseUrl(home, {})!;
    expect(parse(url)).toMatchObject({ password: PASSWORD, sslmode: "verify-full" });
    expect(url.endsWith("@db/holon?sslmode=verify-full")).toBe(true);
  });

  it("a URL that is not Postgres's is refused and nothing is written", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    for (const bad of ["mysql://u:pw-NOTSHOWN@h/d", "pw-NOTSHOWN", "http://u:pw-NOTSHOWN@h/d"]) {
      const r = await holon(home, ["set", "store.database_url", bad]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/store\.database_url: (expected a postgres|not a URL)/);
      expect(r.all).not.toContain("NOTSHOWN");
    }
    const badProfile = await holon(home, ["set", "store.database_credential", "no spaces"]);
    expect(badProfile.code).toBe(1);
    expect(() => statSync(join(home, "config.json"))).toThrow();
    // Several pairs: one bad value refuses them all.
    const pair = await holon(home, [
      "set",
      "model.default",
      "openai/gpt-5.4",
      "store.database_url",
      "mysql://h/d",
    ]);
    expect(pair.code).toBe(1);
    expect(() => statSync(join(home, "config.json"))).toThrow();
  });

  it("a broken config.json is reported without quoting the URL", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    writeFileSync(
      join(home, "config.json"),
      '{"store": {"database_url": postgres://holon:pw-NOTSHOWN@db/holon}}',
    );
    const r = await holon(home, ["get", "store.database_url"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not valid JSON/);
    expect(r.all).not.toContain("NOTSHOWN");
    // Valid JSON, the wrong type: named without its value.
    writeConfig(home, { store: "postgres://holon:pw-NOTSHOWN@db/holon" });
    const typed = await holon(home, ["list"]);
    expect(typed.code).toBe(1);
    expect(typed.stderr).toMatch(/store: expected object, got a string/);
    expect(typed.all).not.toContain("NOTSHOWN");
  });
});

describe("commands never inherit the database URL", () => {
  const SECRET = "pg-5ecret-pw-0123456789";
  const URL_ = `postgres://holon:${SECRET}@db.internal:5432/holon?sslmode=require`;

  it("HOLON_DATABASE_URL is removed by the built-in rules, allowlisted or not", () => {
    const env = { HOLON_DATABASE_URL: URL_, PATH: "/usr/bin" };
    expect(scrubEnv(env, BUILTIN_ENV_POLICY)).toEqual({ PATH: "/usr/bin" });
    expect(scrubEnv(env, { secretNames: [], allow: ["HOLON_DATABASE_URL"] })).toEqual({
      PATH: "/usr/bin",
    });
  });

  it("the host's policy removes the URL, its password and the PG variables, by name and by value", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    writeConfig(home, { runtime: { command_env_allow: ["HOLON_DATABASE_URL", "APP_DSN"] } });
    const hostEnv = { HOLON_DATABASE_URL: URL_ };
    const policy = await commandEnvPolicy(new ConfigSource({ home, env: hostEnv }));
    const env = {
      HOLON_DATABASE_URL: URL_,
      DATABASE_URL: URL_,
      PGPASSWORD: SECRET,
      PGPASSFILE: "/home/u/.pgpass",
      PGSERVICEFILE: "/home/u/.pg_service.conf",
      APP_DSN: `postgresql://holon:${SECRET}@replica/holon`, // allowlisted, but it has the password
      WRAPPED: `connect with ${URL_} please`,
      CONFIG_JSON: `{"db": {"pass": "${SECRET}"}}`, // a long password, anywhere in a value
      PGHOST: "db.internal", // no secret in it
      PATH: "/usr/local/bin:/usr/bin",
    };
    const out = scrubEnv(env, policy);
    expect(out).toEqual({ PGHOST: "db.internal", PATH: "/usr/local/bin:/usr/bin" });
    expect(JSON.stringify(out)).not.toContain(SECRET);

    // Without a database URL the PG variables are the user's business.
    const sqlite = await commandEnvPolicy(
      new ConfigSource({ home: tempHome("holon-test-", { sqlite: true }), env: {} }),
    );
    expect(scrubEnv({ PGPASSFILE: "/p", DATABASE_URL: "postgres://x@y/z" }, sqlite)).toEqual({
      PGPASSFILE: "/p",
      DATABASE_URL: "postgres://x@y/z",
    });
  });

  it("a password from a credential profile is withheld too; a short one only as a whole", async () => {
    const home = tempHome("holon-test-", { sqlite: true });
    writeConfig(home, {
      store: { database_url: "postgres://holon@db/holon", database_credential: "db" },
    });
    storeCredential(home, "db", "holon");
    const source = new ConfigSource({ home, env: {} });
    const policy = await commandEnvPolicy(source);
    const out = scrubEnv(
      {
        HOME: "/home/holon", // "holon" inside: kept (a short password matches only whole values)
        USER_PW: "holon",
        OTHER_DSN: "postgres://holon:holon@elsewhere/x",
        PARAM_DSN: "postgres://elsewhere/x?password=holon",
        PATH: "/opt/holon/bin",
      },
      policy,
    );
    expect(out).toEqual({ HOME: "/home/holon", PATH: "/opt/holon/bin" });
    // A new password in the store applies to the next command without a config change.
    storeCredential(home, "db", "a-much-longer-database-password");
    const next = await commandEnvPolicy(source);
    expect(scrubEnv({ X: "prefix a-much-longer-database-password" }, next)).toEqual({});
  });

  it("databaseSecrets is empty without a URL and never throws on a bad one", () => {
    expect(databaseSecrets([null])).toEqual({ names: [], values: [], fragments: [] });
    const bad = databaseSecrets(["not a url"]);
    expect(bad.fragments).toContain("not a url");
    expect(bad.names).toContain("PGPASSWORD");
  });
});
