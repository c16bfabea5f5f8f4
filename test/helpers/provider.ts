// Configure the scripted fake provider for a home exactly as a user would, through the CLI.
import { afterAll, beforeAll, expect } from "vitest";
import { cleanupHomes, runCli } from "./home.ts";
import { startFakeProvider, type FakeProvider } from "../fake-provider/server.ts";

export async function configureFakeProvider(
  home: string,
  transport: "openai_responses" | "anthropic_messages" | "openai_chat_completions",
  baseUrl: string,
): Promise<void> {
  const env = { HOLON_HOME: home };
  const set = await runCli(
    [
      "config",
      "providers",
      "set",
      "fake",
      "--transport",
      transport,
      "--base-url",
      baseUrl,
      "--credential-source",
      "none",
      "--credential-kind",
      "none",
    ],
    { env },
  );
  expect(set.code, set.stderr).toBe(0);
  const model = await runCli(["config", "set", "model.default", "fake/test-model"], { env });
  expect(model.code, model.stderr).toBe(0);
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
