// `holon config set` with several key/value pairs, as a user runs it: one process, one write of
// config.json; every pair is checked first, so a refused pair (or a key left without a value)
// leaves the file byte for byte as it was.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanupHomes, runCli, tempHome as anyHome } from "./helpers/home.ts";

// These tests are about config.json's own contents (a missing file, exact files): their homes
// get no database and no `store` section in a Postgres run either.
const tempHome = (prefix?: string) => anyHome(prefix, { sqlite: true });

afterAll(cleanupHomes);

const holon = (home: string, ...args: string[]) =>
  runCli(["config", ...args], { env: { HOLON_HOME: home } });

describe("holon config set with several pairs", () => {
  it("stores a provider and the default model in one call, the file `providers set` leaves", async () => {
    const many = tempHome();
    const r = await holon(
      many,
      "set",
      "providers.local.transport",
      "openai_chat_completions",
      "providers.local.base_url",
      "http://127.0.0.1:9/v1",
      "providers.local.credential_source",
      "none",
      "providers.local.credential_kind",
      "none",
      "model.default",
      "local/small",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => l.split(" = ")[0]),
    ).toEqual([
      "providers.local.transport",
      "providers.local.base_url",
      "providers.local.credential_source",
      "providers.local.credential_kind",
      "model.default",
    ]);
    // No warning about the provider being unknown: it is stored with the model.
    expect(r.stderr).not.toContain("not known yet");

    const two = tempHome();
    const p = await holon(
      two,
      "providers",
      "set",
      "local",
      "--transport",
      "openai_chat_completions",
      "--base-url",
      "http://127.0.0.1:9/v1",
      "--credential-source",
      "none",
      "--credential-kind",
      "none",
    );
    expect(p.code, p.stderr).toBe(0);
    expect((await holon(two, "set", "model.default", "local/small")).code).toBe(0);
    const file = (home: string) => readFileSync(join(home, "config.json"), "utf8");
    expect(file(many)).toBe(file(two));
    expect((await holon(many, "get", "model.default")).stdout).toContain("local/small");
  });

  it("answers --json with one result per pair, and a single pair as before", async () => {
    const home = tempHome();
    const one = await holon(home, "set", "model.default", "openai/gpt-5.4", "--json");
    expect(JSON.parse(one.stdout)).toMatchObject({ key: "model.default", value: "openai/gpt-5.4" });
    const r = await holon(
      home,
      "set",
      "model.default",
      "anthropic/claude-sonnet-4-6",
      "retention.events.max_age_days",
      "7",
      "--json",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject([
      { key: "model.default", value: "anthropic/claude-sonnet-4-6", previous: "openai/gpt-5.4" },
      { key: "retention.events.max_age_days", value: 7 },
    ]);
  });

  it("a refused pair, an unknown key or a key without a value writes nothing", async () => {
    const home = tempHome();
    expect((await holon(home, "set", "model.default", "openai/gpt-5.4")).code).toBe(0);
    const before = readFileSync(join(home, "config.json"), "utf8");
    const cases: [string[], RegExp][] = [
      [
        ["model.default", "anthropic/claude-sonnet-4-6", "retention.events.max_age_days", "soon"],
        /retention\.events\.max_age_days/,
      ],
      [
        ["runtime.disable_provider_fallback", "true", "no.such.key", "1"],
        /no\.such\.key.*unknown key/,
      ],
      [
        ["model.default", "anthropic/claude-sonnet-4-6", "runtime.disable_provider_fallback"],
        /has no value/,
      ],
    ];
    for (const [args, message] of cases) {
      const r = await holon(home, "set", ...args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toMatch(message);
      expect(readFileSync(join(home, "config.json"), "utf8")).toBe(before);
    }
  });
});
