// Prompts from standard input and files: `holon prompt -` and `--file`, and the same for
// `holon run`. One limit on every path (the host's 256 KiB request cap), refused in one line
// before anything is sent or a runtime is opened; bytes that are not UTF-8 are replaced and
// the user is warned.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MAX_BODY_BYTES } from "../src/http/support.ts";
import { reply } from "./fake-provider/server.ts";
import { runCli, startRuntime, tempHome, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
let rt: TestRuntime;
const env = () => ({ HOLON_HOME: rt.home });

beforeAll(async () => {
  rt = await startRuntime();
  // Held, so what the tests queue stays queued and can be read back as sent.
  await rt.req("POST", "/control/agents/main/control", { action: "pause" });
});
afterAll(async () => {
  await rt.close();
});

async function queuedText(stdout: string): Promise<string> {
  const { message_id } = JSON.parse(stdout);
  const m = (await rt.host.store.messages.get(message_id))!;
  return (m.body as { text: string }).text;
}

function file(content: string | Buffer): string {
  const path = join(tempHome("holon-prompt-"), "prompt.txt");
  writeFileSync(path, content);
  return path;
}

/** The prompt body `holon prompt` sends, less the text: what the text may fill up to the cap. */
const PROMPT_OVERHEAD = JSON.stringify({ text: "", surface: "cli_prompt" }).length;

describe("holon prompt from standard input and files", () => {
  it("`-` reads standard input, `--file` a file, both verbatim", async () => {
    const piped = await runCli(["prompt", "--json", "-"], {
      env: env(),
      input: "line one\nline two\n",
    });
    expect(piped.code, piped.stderr).toBe(0);
    expect(await queuedText(piped.stdout)).toBe("line one\nline two\n");

    const fromFile = await runCli(["prompt", "--json", "--file", file("from a file ✓\n")], {
      env: env(),
    });
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(await queuedText(fromFile.stdout)).toBe("from a file ✓\n");

    const both = await runCli(["prompt", "--file", file("x"), "words"], { env: env() });
    expect(both.code).toBe(1);
    expect(both.stderr).toContain("not both");
    const empty = await runCli(["prompt", "-"], { env: env(), input: "  \n" });
    expect(empty.stderr).toBe("error: the prompt is empty\n");
  });

  it("one limit on every path: up to the host's cap is sent, one byte more is refused in one line", async () => {
    const pending = async () => await rt.host.store.messages.pendingCount("main");
    const fits = "a".repeat(MAX_BODY_BYTES - PROMPT_OVERHEAD);
    const ok = await runCli(["prompt", "--json", "-"], { env: env(), input: fits });
    expect(ok.code, ok.stderr).toBe(0);
    expect(await queuedText(ok.stdout)).toHaveLength(fits.length);

    const before = await pending();
    for (const [how, args, input] of [
      ["stdin", ["prompt", "-"], fits + "a"],
      ["file", ["prompt", "--file", file(fits + "a")], ""],
      ["stdin, far over", ["prompt", "-"], "b".repeat(3 * MAX_BODY_BYTES)],
      ["file, far over", ["prompt", "--file", file("b".repeat(3 * MAX_BODY_BYTES))], ""],
    ] as const) {
      const r = await runCli([...args], { env: env(), input });
      expect(r.code, how).toBe(1);
      expect(r.stderr.trim().split("\n"), how).toHaveLength(1);
      expect(r.stderr, how).toMatch(/the limit is 256 KiB per request, so nothing was sent/);
    }
    expect(await pending()).toBe(before);
  });

  it("bytes that are not UTF-8 are replaced, with a warning", async () => {
    const bad = Buffer.concat([Buffer.from("caf"), Buffer.from([0xe9]), Buffer.from(" ok")]);
    const r = await runCli(["prompt", "--json", "--file", file(bad)], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/warning: .*prompt\.txt is not valid UTF-8; the invalid bytes/);
    expect(await queuedText(r.stdout)).toBe("caf\uFFFD ok");
    const piped = await runCli(["prompt", "--json", "-"], { env: env(), input: bad });
    expect(piped.stderr).toContain("standard input is not valid UTF-8");
  });
});

describe("holon run from standard input and files", () => {
  it("without a host: `-` runs the piped prompt; too big is refused before a runtime opens", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    fake.enqueue(reply.text("piped answer"));
    const before = fake.requests.length;
    const r = await runCli(["run", "-"], {
      env: { HOLON_HOME: home },
      input: "PIPED PROMPT\n",
      cwd: tempHome("holon-ws-"),
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("piped answer\n");
    expect(JSON.stringify(fake.requests[before]!.body)).toContain("PIPED PROMPT");

    const fresh = tempHome();
    const big = await runCli(["run", "--file", file("c".repeat(MAX_BODY_BYTES))], {
      env: { HOLON_HOME: fresh },
    });
    expect(big.code).toBe(1);
    expect(big.stderr).toMatch(/^error: the prompt is 256 KiB .*so nothing was sent\n$/);
    expect(existsSync(join(fresh, "holon.db"))).toBe(false);
  }, 90_000);
});
