// The PreCompact hook: fired just before a compaction replaces older rounds of a long turn,
// with the Claude Code input shape (`trigger: "auto"`, `transcript_path: null`). A matcher
// names the trigger: `auto` fires, `manual` never does (Holon compacts on its own).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fault, reply } from "./fake-provider/server.ts";
import { runCli, tempHome } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
const WINDOW = 16_000;

describe("PreCompact", () => {
  it("runs before each compaction of a long turn, with the Claude Code input", async () => {
    const home = tempHome();
    const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: home } });
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const entry = { context_window_tokens: WINDOW, runtime_max_output_tokens: 2_000 };
    expect(
      (await cli("config", "set", "models.catalog.fake/test-model", JSON.stringify(entry))).code,
    ).toBe(0);
    const auto = join(home, "precompact-auto.jsonl");
    const manual = join(home, "precompact-manual.jsonl");
    const hooks = {
      PreCompact: [
        {
          matcher: "auto",
          hooks: [{ type: "command", command: `cat >> ${auto}; echo >> ${auto}` }],
        },
        { matcher: "manual", hooks: [{ type: "command", command: `cat >> ${manual}` }] },
      ],
    };
    const set = await cli("config", "set", "hooks", JSON.stringify(hooks));
    expect(set.code, set.stderr).toBe(0);
    const ROUNDS = 30;
    let calls = 0;
    fake.setFallback((req) => {
      if (Buffer.byteLength(req.raw) / 4 > WINDOW) return fault.contextLength();
      calls++;
      if (calls > ROUNDS) return reply.text("done");
      return reply.tools([
        {
          name: "ExecCommand",
          arguments: { cmd: `head -c 4096 /dev/zero | tr '\\0' a; echo " round ${calls}"` },
          call_id: `call_${calls}`,
        },
      ]);
    });
    const r = await runCli(["run", "--json", "--max-turns", "100", "loop"], {
      env: { HOLON_HOME: home },
      timeoutMs: 120_000,
    });
    expect(r.code, r.stderr + r.stdout.slice(0, 2000)).toBe(0);
    const fired = readFileSync(auto, "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    expect(fired.length).toBeGreaterThan(0);
    expect(fired[0]).toMatchObject({
      hook_event_name: "PreCompact",
      trigger: "auto",
      transcript_path: null,
      compaction: "turn_local_recap",
    });
    expect(typeof fired[0].session_id).toBe("string");
    expect(existsSync(manual)).toBe(false);
  });
});
