// Configure the scripted fake provider for a home exactly as a user would, through the CLI.
import { expect } from "vitest";
import { runCli } from "./home.ts";

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
