// Unit tests for configuration parsing, validation, credentials and model resolution.
import { afterAll, describe, expect, it } from "vitest";
import { chmodSync, readFileSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { cleanupHomes, tempHome as anyHome } from "./helpers/home.ts";
import {
  ConfigFileError,
  ConfigSource,
  getConfigValue,
  loadConfig,
  setConfigValue,
  setProvider,
  unsetConfigValue,
} from "../src/host/config.ts";
import { effectiveConfig, type ConfigFile } from "../src/host/config-schema.ts";
import { isLocalBaseUrl, providerDefinition } from "../src/providers/builtin.ts";
import {
  credentialsSnapshot,
  listCredentials,
  readCredentials,
  redact,
  setCredential,
  type CredentialsSnapshot,
} from "../src/providers/credentials.ts";
import { readCodexAuth } from "../src/providers/codex-auth.ts";
import {
  agentModelState,
  modelChain,
  parseModelRef,
  resolveModelCandidates,
  type ResolutionInputs,
} from "../src/providers/resolve.ts";
import { listModels } from "../src/providers/catalog.ts";

// These tests are about config.json's own contents (a missing file, exact files): their homes
// get no database and no `store` section in a Postgres run either.
const tempHome = (prefix?: string) => anyHome(prefix, { sqlite: true });

afterAll(cleanupHomes);

const noCreds: CredentialsSnapshot = { path: "/nowhere", profiles: {}, error: null };
function inputs(
  file: ConfigFile,
  env: Record<string, string> = {},
  credentials: CredentialsSnapshot = noCreds,
): ResolutionInputs {
  return {
    config: effectiveConfig(file, env).values,
    credentials,
    env,
    codexAuth: () => readCodexAuth({ CODEX_HOME: "/nonexistent-codex-home" }),
  };
}

describe("model refs", () => {
  it("splits at the first slash; the model part may contain slashes", () => {
    expect(parseModelRef("openai/gpt-5.4")).toEqual({ provider_id: "openai", model: "gpt-5.4" });
    expect(parseModelRef("openrouter/anthropic/claude-sonnet-4")).toEqual({
      provider_id: "openrouter",
      model: "anthropic/claude-sonnet-4",
    });
  });
  it.each(["gpt-4", "/gpt", "openai/", "", " openai/x", "Open AI/x", "openai/has space"])(
    "rejects %j",
    (ref) => expect(parseModelRef(ref)).toBeNull(),
  );
});

describe("config.json loading", () => {
  it("a missing file means defaults", () => {
    const home = tempHome();
    const l = loadConfig(home, {});
    expect(l.exists).toBe(false);
    expect(l.error).toBeNull();
    expect(l.values.runtime).toEqual({
      disable_provider_fallback: false,
      default_tool_output_tokens: 8000,
      max_tool_output_tokens: 64000,
      command_env_allow: [],
      max_command_output_bytes: 64 * 1024 * 1024,
    });
    expect(l.values.model.default).toBeNull();
  });

  it("reports a wrong type with the file, the key and the problem", () => {
    const home = tempHome();
    writeFileSync(join(home, "config.json"), JSON.stringify({ model: { fallbacks: "openai/x" } }));
    const l = loadConfig(home, {});
    expect(l.error).toBeInstanceOf(ConfigFileError);
    expect(l.error!.path).toBe(join(home, "config.json"));
    expect(l.error!.key).toBe("model.fallbacks");
    expect(l.error!.problem).toMatch(/expected array/);
  });

  it("reports unknown keys, nested ones included", () => {
    const home = tempHome();
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({ runtime: { disable_fallback: true } }),
    );
    expect(loadConfig(home, {}).error!.key).toBe("runtime.disable_fallback");
    expect(loadConfig(home, {}).error!.problem).toMatch(/unknown key/);
  });

  it("reports JSON syntax errors with a position", () => {
    const home = tempHome();
    writeFileSync(join(home, "config.json"), '{\n  "model": {\n}');
    const e = loadConfig(home, {}).error!;
    expect(e.message).toContain(join(home, "config.json"));
    expect(e.problem).toMatch(/not valid JSON/);
  });

  it("rejects custom providers on non-local endpoints without auth, allows local ones", () => {
    const home = tempHome();
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({
        providers: {
          proxy: { transport: "openai_chat_completions", base_url: "https://p.example/v1" },
        },
      }),
    );
    expect(loadConfig(home, {}).error!.key).toBe("providers.proxy.credential_source");
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({
        providers: { fake: { transport: "openai_responses", base_url: "http://127.0.0.1:9/v1" } },
      }),
    );
    expect(loadConfig(home, {}).error).toBeNull();
  });

  it("accepts the RFC's nested auth block and folds it into flat fields", () => {
    const file: ConfigFile = {
      providers: {
        openai: { auth: { source: "env", kind: "api_key", env: "MY_OPENAI" } },
      },
    };
    const cfg = effectiveConfig(file, {}).values;
    expect(cfg.providers.openai).toEqual({
      credential_source: "env",
      credential_kind: "api_key",
      credential_env: "MY_OPENAI",
    });
  });

  it("applies environment overrides and records them", () => {
    const eff = effectiveConfig(
      { model: { default: "openai/a" }, runtime: { max_tool_output_tokens: 1000 } },
      {
        HOLON_MODEL: "anthropic/b",
        HOLON_DEFAULT_TOOL_OUTPUT_TOKENS: "4000",
        HOLON_MAX_TOOL_OUTPUT_TOKENS: "nope",
        HOLON_CONTROL_TOKEN: "tok",
      },
    );
    expect(eff.values.model.default).toBe("anthropic/b");
    expect(eff.values.control_token).toBe("tok");
    // default is clamped to the max; the bad env value is ignored with a warning
    expect(eff.values.runtime.default_tool_output_tokens).toBe(1000);
    expect(eff.warnings.join("\n")).toMatch(/HOLON_MAX_TOOL_OUTPUT_TOKENS/);
    expect(eff.overrides.map((o) => o.env)).toEqual([
      "HOLON_MODEL",
      "HOLON_DEFAULT_TOOL_OUTPUT_TOKENS",
      "HOLON_CONTROL_TOKEN",
    ]);
  });
});

describe("config writes", () => {
  it("sets, reads back and unsets keys; writes are owner-only", () => {
    const home = tempHome();
    setConfigValue(home, "model.default", "openai/gpt-5.4", {});
    setConfigValue(home, "runtime.max_tool_output_tokens", "32000", {});
    setConfigValue(home, "control_token", "12345", {}); // stays a string
    const l = loadConfig(home, {});
    expect(l.values.model.default).toBe("openai/gpt-5.4");
    expect(l.values.runtime.max_tool_output_tokens).toBe(32000);
    expect(l.values.control_token).toBe("12345");
    expect(getConfigValue(l, "model.default")).toMatchObject({
      value: "openai/gpt-5.4",
      source: "config",
    });
    expect(statSync(join(home, "config.json")).mode & 0o777).toBe(0o600);
    expect(unsetConfigValue(home, "runtime.max_tool_output_tokens").removed).toBe(true);
    expect(loadConfig(home, {}).file).toEqual({
      model: { default: "openai/gpt-5.4" },
      control_token: "12345",
    });
  });

  it("refuses to modify a malformed file and leaves it byte for byte", () => {
    const home = tempHome();
    const path = join(home, "config.json");
    const text = '{"model": {"default": 42}}  ';
    writeFileSync(path, text);
    expect(() => setConfigValue(home, "model.default", "openai/x", {})).toThrow(ConfigFileError);
    expect(() => unsetConfigValue(home, "model.default")).toThrow(/model\.default/);
    expect(readFileSync(path, "utf8")).toBe(text);
  });

  it("rejects unknown keys and wrong types without writing", () => {
    const home = tempHome();
    expect(() => setConfigValue(home, "model.defualt", "openai/x", {})).toThrow(/unknown key/);
    expect(() => setConfigValue(home, "runtime.disable_provider_fallback", "yes", {})).toThrow(
      /expected boolean/,
    );
    expect(() => setConfigValue(home, "providers.x.transport", "grpc", {})).toThrow(
      /expected one of/,
    );
    expect(loadConfig(home, {}).exists).toBe(false);
  });

  it("catalog keys take a model ref containing dots and slashes", () => {
    const home = tempHome();
    setConfigValue(
      home,
      "models.catalog.openrouter/anthropic/claude-4.5",
      '{"context_window_tokens": 200000}',
      {},
    );
    expect(loadConfig(home, {}).values.models.catalog["openrouter/anthropic/claude-4.5"]).toEqual({
      context_window_tokens: 200000,
    });
  });

  it("merges provider fields and validates the whole entry", () => {
    const home = tempHome();
    expect(() =>
      setProvider(home, "proxy", {
        transport: "openai_chat_completions",
        base_url: "https://p.example/v1",
      }),
    ).toThrow(/credential source/);
    setProvider(home, "proxy", {
      transport: "openai_chat_completions",
      base_url: "https://p.example/v1",
      credential_source: "env",
      credential_env: "PROXY_KEY",
    });
    setProvider(home, "proxy", { base_url: "https://q.example/v1" });
    expect(loadConfig(home, {}).values.providers.proxy).toEqual({
      transport: "openai_chat_completions",
      base_url: "https://q.example/v1",
      credential_source: "env",
      credential_env: "PROXY_KEY",
    });
    expect(() => setProvider(home, "Bad Id", { base_url: "http://localhost" })).toThrow(
      /invalid provider id/,
    );
  });
});

describe("credentials store", () => {
  it("creates the file 0600, never lists the secret, and refuses a group-readable file", () => {
    const home = tempHome();
    const path = join(home, "credentials.json");
    const secret = "sk-unit-test-secret-value-123456";
    setCredential(path, "openai:default", "api_key", secret + "\n");
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readCredentials(path).profiles["openai:default"]!.material).toBe(secret);
    expect(JSON.stringify(listCredentials(path))).not.toContain(secret);
    expect(redact(secret)).toBe("configured (…3456)");
    expect(redact("short")).toBe("configured");
    chmodSync(path, 0o644);
    expect(() => readCredentials(path)).toThrow(/readable by its owner only/);
    const snap = credentialsSnapshot(path);
    expect(snap.error!.hint).toContain("chmod 600");
    expect(() => setCredential(path, "x", "api_key", "y")).toThrow(/owner only/);
  });

  it("rejects multi-line material and bad profile ids", () => {
    const path = join(tempHome(), "credentials.json");
    expect(() => setCredential(path, "p", "api_key", "a\nb")).toThrow(/several lines/);
    expect(() => setCredential(path, "p", "api_key", "   ")).toThrow(/empty/);
    expect(() => setCredential(path, "bad id", "api_key", "k")).toThrow(
      /invalid credential profile id/,
    );
  });
});

describe("providers", () => {
  it("knows local endpoints", () => {
    expect(isLocalBaseUrl("http://localhost:1234/v1")).toBe(true);
    expect(isLocalBaseUrl("http://127.0.0.1:9")).toBe(true);
    expect(isLocalBaseUrl("http://[::1]:8080")).toBe(true);
    expect(isLocalBaseUrl("https://api.openai.com/v1")).toBe(false);
    expect(isLocalBaseUrl("http://127.evil.com")).toBe(false);
  });

  it("overriding a built-in's base_url keeps its credential defaults", () => {
    const cfg = effectiveConfig(
      { providers: { openai: { base_url: "http://127.0.0.1:5/v1/" } } },
      {},
    ).values;
    const def = providerDefinition("openai", cfg)!;
    expect(def.base_url).toBe("http://127.0.0.1:5/v1");
    expect(def.transport).toBe("openai_responses");
    expect(def.auth.profiles[0]).toBe("openai:default");
    expect(def.auth.env.map((e) => e.name)).toEqual(["OPENAI_API_KEY"]);
  });
});

describe("candidate resolution", () => {
  const file: ConfigFile = {
    model: {
      default: "openai/gpt-5.4",
      fallbacks: ["anthropic/claude-sonnet-4-6", "openai/gpt-5.4", "nope/x"],
    },
  };

  it("orders default then deduplicated fallbacks; override goes first and keeps the default", () => {
    const cfg = effectiveConfig(file, {}).values;
    expect(modelChain(cfg)).toEqual(["openai/gpt-5.4", "anthropic/claude-sonnet-4-6", "nope/x"]);
    expect(modelChain(cfg, "deepseek/deepseek-v4-pro")).toEqual([
      "deepseek/deepseek-v4-pro",
      "openai/gpt-5.4",
      "anthropic/claude-sonnet-4-6",
      "nope/x",
    ]);
  });

  it("disable_provider_fallback leaves only the effective model", () => {
    const cfg = effectiveConfig(
      { ...file, runtime: { disable_provider_fallback: true } },
      {},
    ).values;
    expect(modelChain(cfg)).toEqual(["openai/gpt-5.4"]);
    expect(modelChain(cfg, "anthropic/x")).toEqual(["anthropic/x"]);
    expect(agentModelState(cfg, "anthropic/x")).toEqual({
      source: "agent_override",
      runtime_default_model: "openai/gpt-5.4",
      effective_model: "anthropic/x",
      effective_fallback_models: [],
      override_model: "anthropic/x",
      provider_fallback_disabled: true,
    });
  });

  it("marks candidates unavailable with reasons: missing credential, unknown provider, bad ref, bad transport", () => {
    const c = resolveModelCandidates(
      inputs(
        {
          model: {
            default: "openai/gpt-5.4",
            fallbacks: ["anthropic/claude-sonnet-4-6", "nope/x", "garbage", "weird/m"],
          },
          providers: { weird: { transport: "gemini_native", base_url: "http://localhost:1" } },
        },
        { ANTHROPIC_API_KEY: "ak-123" },
      ),
    );
    expect(c.map((x) => x.model_ref)).toEqual([
      "openai/gpt-5.4",
      "anthropic/claude-sonnet-4-6",
      "nope/x",
      "garbage",
      "weird/m",
    ]);
    expect(c[0]!.unavailable_reason).toMatch(/OPENAI_API_KEY not set/);
    expect(c[1]!.unavailable_reason).toBeUndefined();
    expect(c[1]!.credential).toEqual({
      kind: "api_key",
      value: "ak-123",
      source_label: "env:ANTHROPIC_API_KEY",
    });
    expect(c[1]!.base_url).toBe("https://api.anthropic.com");
    expect(c[2]!.unavailable_reason).toMatch(/unknown provider "nope"/);
    expect(c[3]!.unavailable_reason).toMatch(/invalid model ref/);
    expect(c[4]!.unavailable_reason).toMatch(/transport "gemini_native".*not support/);
  });

  it("prefers the Holon profile over the env var for built-ins; anthropic auth token is a bearer token", () => {
    const creds: CredentialsSnapshot = {
      path: "/x",
      profiles: {
        "openai:default": {
          kind: "api_key",
          material: "from-profile",
          created_at: "",
          updated_at: "",
        },
      },
      error: null,
    };
    const c = resolveModelCandidates(
      inputs(
        { model: { default: "openai/gpt-5.4", fallbacks: ["anthropic/claude-sonnet-4-6"] } },
        { OPENAI_API_KEY: "from-env", ANTHROPIC_AUTH_TOKEN: "tok" },
        creds,
      ),
    );
    expect(c[0]!.credential!.value).toBe("from-profile");
    expect(c[0]!.credential!.source_label).toBe("profile:openai:default");
    expect(c[1]!.credential).toMatchObject({
      kind: "bearer_token",
      source_label: "env:ANTHROPIC_AUTH_TOKEN",
    });
  });

  it("a stored profile's kind applies unless the provider sets credential_kind", () => {
    const creds: CredentialsSnapshot = {
      path: "/x",
      profiles: {
        "anthropic:default": {
          kind: "bearer_token",
          material: "t",
          created_at: "",
          updated_at: "",
        },
      },
      error: null,
    };
    const model = { default: "anthropic/claude-sonnet-4-6" };
    const [a] = resolveModelCandidates(inputs({ model }, {}, creds));
    expect(a!.credential!.kind).toBe("bearer_token");
    const [b] = resolveModelCandidates(
      inputs({ model, providers: { anthropic: { credential_kind: "api_key" } } }, {}, creds),
    );
    expect(b!.credential!.kind).toBe("api_key");
  });

  it("an unreadable credential store explains itself in the candidate", () => {
    const creds: CredentialsSnapshot = {
      path: "/x",
      profiles: {},
      error: { message: "/x: permissions are 0644", hint: "run: chmod 600 /x" },
    };
    const [c] = resolveModelCandidates(inputs({ model: { default: "openai/gpt-5.4" } }, {}, creds));
    expect(c!.unavailable_reason).toMatch(/chmod 600/);
  });

  it("local custom providers need no credential; catalog metadata sets max_output_tokens", () => {
    const [c] = resolveModelCandidates(
      inputs({
        model: { default: "fake/m1" },
        providers: {
          fake: { transport: "openai_chat_completions", base_url: "http://127.0.0.1:7/v1" },
        },
        models: { catalog: { "fake/m1": { runtime_max_output_tokens: 1234 } } },
      }),
    );
    expect(c).toEqual({
      model_ref: "fake/m1",
      provider_id: "fake",
      model: "m1",
      transport: "openai_chat_completions",
      base_url: "http://127.0.0.1:7/v1",
      credential: null,
      max_output_tokens: 1234,
    });
  });

  it("an explicit env source reads only the named variable", () => {
    const [c] = resolveModelCandidates(
      inputs(
        {
          model: { default: "proxy/m" },
          providers: {
            proxy: {
              transport: "anthropic_messages",
              base_url: "https://proxy.example",
              credential_source: "env",
              credential_env: "PROXY_KEY",
            },
          },
        },
        { ANTHROPIC_API_KEY: "should-not-leak" },
      ),
    );
    expect(c!.unavailable_reason).toMatch(/PROXY_KEY not set/);
  });
});

describe("codex login", () => {
  function codexHome(auth: unknown): string {
    const dir = tempHome("codex-");
    writeFileSync(join(dir, "auth.json"), JSON.stringify(auth));
    return dir;
  }
  const jwt = (claims: object) =>
    `h.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.s`;

  it("reuses the access token and account id", () => {
    const access = jwt({ exp: Math.floor(Date.now() / 1000) + 3600 });
    const a = readCodexAuth({
      CODEX_HOME: codexHome({ tokens: { access_token: access, account_id: "acct-1" } }),
    });
    expect(a.status).toBe("configured");
    expect(a.credential).toEqual({
      kind: "session_token",
      value: access,
      headers: { "chatgpt-account-id": "acct-1" },
      source_label: "external_cli:codex",
    });
  });

  it("finds the account id in the id token, and reports expiry and api-key-only files", () => {
    const id = jwt({ "https://api.openai.com/auth": { chatgpt_account_id: "acct-2" } });
    const ok = readCodexAuth({
      CODEX_HOME: codexHome({ tokens: { access_token: "opaque", id_token: id } }),
    });
    expect(ok.credential!.headers).toEqual({ "chatgpt-account-id": "acct-2" });
    const expired = readCodexAuth({
      CODEX_HOME: codexHome({ tokens: { access_token: jwt({ exp: 1000 }) } }),
    });
    expect(expired.status).toBe("expired");
    expect(expired.reason).toMatch(/codex login/);
    expect(readCodexAuth({ CODEX_HOME: codexHome({ OPENAI_API_KEY: "sk-x" }) }).status).toBe(
      "api_key_only",
    );
    expect(readCodexAuth({ CODEX_HOME: "/definitely/missing" }).status).toBe("missing");
  });
});

describe("ConfigSource (live view)", () => {
  it("picks up CLI writes without restart and keeps the last good config when the file breaks", () => {
    const home = tempHome();
    const src = new ConfigSource({ home, env: {} });
    expect(src.current().values.model.default).toBeNull();
    const first = src.current();
    expect(src.current()).toBe(first); // cached while unchanged
    setConfigValue(home, "model.default", "openai/gpt-5.4", {});
    expect(src.current().values.model.default).toBe("openai/gpt-5.4");
    // A file written behind the host's back is seen at the next turn's check.
    writeFileSync(join(home, "config.json"), "{ broken");
    expect(src.current().values.model.default).toBe("openai/gpt-5.4");
    src.refresh();
    const broken = src.current();
    expect(broken.error).not.toBeNull();
    expect(broken.values.model.default).toBe("openai/gpt-5.4");
    mkdirSync(home, { recursive: true });
    setCredential(join(home, "credentials.json"), "openai:default", "api_key", "sk-live-view-123");
    writeFileSync(
      join(home, "config.json"),
      JSON.stringify({ model: { default: "openai/gpt-5.4" } }),
    );
    const [c] = src.forTurn();
    expect(c!.credential!.source_label).toBe("profile:openai:default");
    expect(src.modelState("anthropic/x").effective_fallback_models).toEqual(["openai/gpt-5.4"]);
  });
});

describe("model catalog", () => {
  it("lists default and fallbacks first with availability", () => {
    const l = listModels(
      inputs(
        {
          model: { default: "fake/m1", fallbacks: ["openai/gpt-5.4"] },
          providers: {
            fake: {
              transport: "openai_chat_completions",
              base_url: "http://localhost:1/v1",
              models: ["m2"],
            },
          },
          models: { catalog: { "fake/m1": { display_name: "Fake One" } } },
        },
        {},
      ),
    );
    expect(l.available_models.slice(0, 2).map((m) => m.id)).toEqual(["fake/m1", "openai/gpt-5.4"]);
    expect(l.available_models[0]).toMatchObject({
      display_name: "Fake One",
      provider: "fake",
      transport: "openai_chat_completions",
      available: true,
      is_default: true,
      metadata_source: "config_catalog",
    });
    expect(l.model_availability["openai/gpt-5.4"]).toBe(false);
    expect(l.model_availability["fake/m2"]).toBe(true);
    expect(l.available_models.filter((m) => m.id === "openai/gpt-5.4")).toHaveLength(1);
  });
});
