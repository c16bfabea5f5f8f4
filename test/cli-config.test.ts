// `holon config …` as a user runs it: the real binary against a temp HOLON_HOME.
import { afterAll, describe, expect, it } from "vitest";
import { chmodSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, runCli, tempHome as anyHome } from "./helpers/home.ts";

// These tests are about config.json's own contents (a missing file, exact files): their homes
// get no database and no `store` section in a Postgres run either.
const tempHome = (prefix?: string) => anyHome(prefix, { sqlite: true });

afterAll(cleanupHomes);

/** An environment with no provider credentials leaking in from the machine running the tests. */
function cleanEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = { HOLON_HOME: home, CODEX_HOME: join(home, "no-codex") };
  for (const k of Object.keys(process.env)) {
    if (/_API_KEY$|_AUTH_TOKEN$|^HOLON_|^HF_TOKEN$/.test(k)) env[k] = "";
  }
  env.HOLON_HOME = home;
  return { ...env, ...extra };
}

async function holon(
  home: string,
  args: string[],
  opts: { input?: string; env?: Record<string, string> } = {},
) {
  const r = await runCli(["config", ...args], {
    env: cleanEnv(home, opts.env),
    ...(opts.input !== undefined ? { input: opts.input } : {}),
  });
  return { ...r, all: r.stdout + r.stderr };
}

describe("holon config get/set/unset/list/schema", () => {
  it("round-trips keys and reports where values come from", async () => {
    const home = tempHome();
    expect((await holon(home, ["set", "model.default", "openai/gpt-5.4"])).code).toBe(0);
    const set = await holon(home, [
      "set",
      "model.fallbacks",
      '["anthropic/claude-sonnet-4-6"]',
      "--json",
    ]);
    expect(JSON.parse(set.stdout)).toMatchObject({
      key: "model.fallbacks",
      value: ["anthropic/claude-sonnet-4-6"],
      applied_via: "offline_store",
    });
    const get = await holon(home, ["get", "model.default", "--json"]);
    expect(JSON.parse(get.stdout)).toEqual({
      key: "model.default",
      value: "openai/gpt-5.4",
      source: "config",
    });
    expect((await holon(home, ["get", "model.default"])).stdout.trim()).toBe("openai/gpt-5.4");
    const env = await holon(home, ["get", "model.default", "--json"], {
      env: { HOLON_MODEL: "x/y" },
    });
    expect(JSON.parse(env.stdout)).toMatchObject({
      value: "x/y",
      source: "env",
      env: "HOLON_MODEL",
    });
    const list = JSON.parse((await holon(home, ["list", "--json"])).stdout);
    expect(list.values).toContainEqual({
      key: "runtime.max_tool_output_tokens",
      value: 64000,
      source: "default",
    });
    expect((await holon(home, ["unset", "model.fallbacks"])).code).toBe(0);
    expect(JSON.parse(readFileSync(join(home, "config.json"), "utf8"))).toEqual({
      model: { default: "openai/gpt-5.4" },
    });
    const schema = JSON.parse((await holon(home, ["schema", "--json"])).stdout);
    expect(schema.keys.map((k: { key: string }) => k.key)).toEqual(
      expect.arrayContaining([
        "model.default",
        "runtime.disable_provider_fallback",
        "providers.<id>.transport",
      ]),
    );
  });

  it("rejects unknown keys and wrong types with exit code 1 and writes nothing", async () => {
    const home = tempHome();
    const unknown = await holon(home, ["set", "model.defualt", "openai/x"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/model\.defualt: unknown key/);
    const wrong = await holon(home, ["set", "runtime.disable_provider_fallback", "sometimes"]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/runtime\.disable_provider_fallback: expected boolean/);
    const badRef = await holon(home, ["set", "model.default", "gpt-4"]);
    expect(badRef.stderr).toMatch(/model ref/);
    expect(() => statSync(join(home, "config.json"))).toThrow();
  });

  it("a malformed config.json is named (file, key, problem) and never rewritten", async () => {
    const home = tempHome();
    const path = join(home, "config.json");
    const text = '{\n  "model": { "fallbacks": "anthropic/x" },\n  "extra": true\n}\n';
    writeFileSync(path, text);
    for (const args of [
      ["set", "model.default", "openai/gpt-5.4"],
      ["unset", "model.fallbacks"],
      ["get", "model.default"],
      ["list"],
      [
        "providers",
        "set",
        "fake",
        "--transport",
        "openai_responses",
        "--base-url",
        "http://127.0.0.1:1/v1",
      ],
    ]) {
      const r = await holon(home, args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toContain(path);
      expect(r.stderr).toContain("model.fallbacks");
      expect(r.stderr).toMatch(/expected array/);
    }
    const doctor = await holon(home, ["doctor", "--json"]);
    expect(doctor.code).toBe(1);
    expect(JSON.parse(doctor.stdout).checks[0]).toMatchObject({
      check: "config.json",
      status: "fail",
    });
    writeFileSync(path, "{ not json");
    const syntax = await holon(home, ["set", "model.default", "openai/gpt-5.4"]);
    expect(syntax.stderr).toMatch(/not valid JSON/);
    expect(readFileSync(path, "utf8")).toBe("{ not json");
  });

  it("list and get never show the whole control token", async () => {
    const home = tempHome();
    const token = "ctl-token-abcdefghijklmnopqrstuvwxyz";
    const set = await holon(home, ["set", "control_token", token]);
    expect(set.code).toBe(0);
    for (const args of [
      ["list"],
      ["list", "--json"],
      ["get", "control_token"],
      ["get", "control_token", "--json"],
    ]) {
      const r = await holon(home, args);
      expect(r.code).toBe(0);
      expect(r.all).not.toContain(token);
    }
    expect(set.all).not.toContain(token);
  });
});

describe("holon config credentials", () => {
  const secret = "sk-cli-test-0123456789-SECRET-abcdef";

  it("stores from stdin with mode 0600 and never prints the secret anywhere", async () => {
    const home = tempHome();
    const set = await holon(
      home,
      ["credentials", "set", "openai:default", "--kind", "api_key", "--stdin"],
      {
        input: secret + "\n",
      },
    );
    expect(set.code).toBe(0);
    const path = join(home, "credentials.json");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, "utf8")).profiles["openai:default"].material).toBe(secret);
    await holon(home, ["set", "model.default", "openai/gpt-5.4"]);
    const argLists = [
      ["credentials", "list"],
      ["credentials", "list", "--json"],
      ["list"],
      ["list", "--json"],
      ["get", "model.default"],
      ["doctor"],
      ["doctor", "--json"],
      ["providers", "get", "openai"],
      ["providers", "get", "openai", "--json"],
      ["providers", "list", "--json"],
      ["providers", "doctor"],
      ["providers", "doctor", "--json"],
      ["models", "list"],
      ["models", "list", "--json"],
    ];
    const outputs = [set, ...(await Promise.all(argLists.map((args) => holon(home, args))))];
    for (const o of outputs) expect(o.all).not.toContain(secret);
    const doctor = JSON.parse(outputs[7]!.stdout);
    expect(doctor.ok).toBe(true);
    expect(doctor.candidates[0]).toMatchObject({
      model_ref: "openai/gpt-5.4",
      available: true,
      credential_from: "profile:openai:default",
    });
    const listed = JSON.parse(outputs[2]!.stdout).profiles[0];
    expect(listed).toMatchObject({
      profile: "openai:default",
      kind: "api_key",
      status: "configured",
    });
    expect((await holon(home, ["credentials", "remove", "openai:default"])).code).toBe(0);
    expect(JSON.parse(readFileSync(path, "utf8")).profiles).toEqual({});
  });

  it("refuses a credential file other users can read, with a fix", async () => {
    const home = tempHome();
    await holon(home, [
      "credentials",
      "set",
      "deepseek",
      "--kind",
      "api_key",
      "--material",
      secret,
    ]);
    const path = join(home, "credentials.json");
    chmodSync(path, 0o644);
    const list = await holon(home, ["credentials", "list"]);
    expect(list.code).toBe(1);
    expect(list.stderr).toMatch(/0644/);
    expect(list.stderr).toContain(`chmod 600 ${path}`);
    const set = await holon(home, ["credentials", "set", "x", "--kind", "api_key", "--stdin"], {
      input: "k",
    });
    expect(set.code).toBe(1);
    await holon(home, ["set", "model.default", "deepseek/deepseek-v4-pro"]);
    const doctor = JSON.parse((await holon(home, ["doctor", "--json"])).stdout);
    expect(doctor.checks).toContainEqual(
      expect.objectContaining({ check: "credentials.json", status: "fail" }),
    );
    expect(doctor.candidates[0].reason).toMatch(/chmod 600/);
    expect(JSON.stringify(doctor)).not.toContain(secret);
  });

  it("needs --kind and exactly one of --stdin / --material", async () => {
    const home = tempHome();
    expect(
      (await holon(home, ["credentials", "set", "p", "--stdin"], { input: "k" })).stderr,
    ).toMatch(/--kind/);
    expect((await holon(home, ["credentials", "set", "p", "--kind", "api_key"])).stderr).toMatch(
      /--stdin/,
    );
    const empty = await holon(home, ["credentials", "set", "p", "--kind", "api_key", "--stdin"], {
      input: "\n",
    });
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/empty/);
  });
});

describe("holon config providers and models", () => {
  it("adds a local provider without auth, refuses a remote one without auth, lists and removes", async () => {
    const home = tempHome();
    const remote = await holon(home, [
      "providers",
      "set",
      "proxy",
      "--transport",
      "openai_chat_completions",
      "--base-url",
      "https://proxy.example/v1",
    ]);
    expect(remote.code).toBe(1);
    expect(remote.stderr).toMatch(/providers\.proxy\.credential_source/);
    const local = await holon(home, [
      "providers",
      "set",
      "fake",
      "--transport",
      "anthropic_messages",
      "--base-url",
      "http://127.0.0.1:9/",
      "--json",
    ]);
    expect(local.code).toBe(0);
    expect(JSON.parse(local.stdout)).toMatchObject({
      id: "fake",
      created: true,
      applied_via: "offline_store",
    });
    const get = JSON.parse((await holon(home, ["providers", "get", "fake", "--json"])).stdout);
    expect(get).toMatchObject({
      transport: "anthropic_messages",
      base_url: "http://127.0.0.1:9",
      credential_source: "none",
      available: true,
    });
    await holon(home, ["set", "model.default", "fake/m"]);
    const models = JSON.parse((await holon(home, ["models", "list", "--json"])).stdout);
    expect(models.available_models[0]).toMatchObject({
      id: "fake/m",
      available: true,
      is_default: true,
    });
    expect(models.model_availability["fake/m"]).toBe(true);
    const doctor = JSON.parse(
      (await holon(home, ["providers", "doctor", "fake", "--json"])).stdout,
    );
    expect(doctor.retry_policy.max_retries).toBe(2);
    expect(doctor.providers).toHaveLength(1);
    const list = JSON.parse((await holon(home, ["providers", "list", "--json"])).stdout);
    expect(list.providers.map((p: { id: string }) => p.id)).toEqual(
      expect.arrayContaining([
        "openai",
        "anthropic",
        "openai-codex",
        "deepseek",
        "openrouter",
        "fake",
      ]),
    );
    expect((await holon(home, ["providers", "remove", "fake"])).code).toBe(0);
    expect((await holon(home, ["providers", "get", "fake"])).code).toBe(1);
  });

  it("shows env-var credentials as configured, by name only", async () => {
    const home = tempHome();
    const key = "env-secret-key-0123456789abcdef";
    const r = await holon(home, ["providers", "doctor", "deepseek", "--json"], {
      env: { DEEPSEEK_API_KEY: key },
    });
    expect(r.all).not.toContain(key);
    expect(JSON.parse(r.stdout).providers[0]).toMatchObject({
      id: "deepseek",
      available: true,
      credential_status: "configured",
      credential_from: "env:DEEPSEEK_API_KEY",
    });
  });

  it("doctor fails when no model is configured and explains unavailable fallbacks", async () => {
    const home = tempHome();
    const empty = await holon(home, ["doctor"]);
    expect(empty.code).toBe(1);
    expect(empty.stdout).toMatch(/no default model/);
    await holon(home, ["set", "model.default", "nope/x"]);
    const d = JSON.parse((await holon(home, ["doctor", "--json"])).stdout);
    expect(d.candidates[0].reason).toMatch(/unknown provider "nope"/);
    expect(d.retry_policy).toBeDefined();
  });
});
