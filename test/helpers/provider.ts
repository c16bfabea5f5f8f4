// Configure the scripted fake provider for a home exactly as a user would, through the CLI.
import { afterAll, beforeAll, expect } from "vitest";
import { cleanupHomes, runCli } from "./home.ts";
import {
  startFakeProvider,
  type FakeProvider,
  type RecordedRequest,
} from "../fake-provider/server.ts";

export async function configureFakeProvider(
  home: string,
  transport: "openai_responses" | "anthropic_messages" | "openai_chat_completions",
  baseUrl: string,
): Promise<void> {
  // One `holon config set` with several keys: the provider and the default model in one
  // process and one write of config.json (the same file `config providers set` and a second
  // `config set model.default` would leave).
  const set = await runCli(
    [
      "config",
      "set",
      "providers.fake.transport",
      transport,
      "providers.fake.base_url",
      baseUrl,
      "providers.fake.credential_source",
      "none",
      "providers.fake.credential_kind",
      "none",
      "model.default",
      "fake/test-model",
    ],
    { env: { HOLON_HOME: home } },
  );
  expect(set.code, set.stderr).toBe(0);
}

/**
 * The scripted fake provider for one test file: started before its tests, closed after them
 * (with the file's temporary homes). The returned handle forwards to the running instance.
 */
export function useFakeProvider(): FakeProvider {
  let instance: FakeProvider | undefined;
  beforeAll(async () => {
    instance = await startFakeProvider();
  });
  afterAll(async () => {
    await instance?.close();
    cleanupHomes();
  });
  return new Proxy({} as FakeProvider, {
    get(_target, key) {
      if (!instance) throw new Error("the fake provider starts in beforeAll");
      const value = Reflect.get(instance, key, instance) as unknown;
      return typeof value === "function" ? value.bind(instance) : value;
    },
  });
}

/** The agent a recorded request was made for (from its prompt cache key, `holon-<agent>-…`). */
export function requestAgent(req: RecordedRequest): string {
  const key = String(req.body.prompt_cache_key ?? "");
  return key.slice("holon-".length, key.lastIndexOf("-"));
}

/** The last input item of a recorded Responses request: its type and its JSON text. */
export function lastInput(req: RecordedRequest): { type: string; text: string } {
  const input = req.body.input as any[];
  const item = input[input.length - 1];
  return { type: String(item?.type ?? ""), text: JSON.stringify(item) };
}
