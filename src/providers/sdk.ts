// The official provider SDKs, each loaded the first time a transport of its family sends.
// A host that only ever talks to one family never holds the other (loading both costs some
// 25 MB of RSS and 90 ms at start-up; most hosts use one). Loading an SDK also registers its
// error classes with errors.ts, which classifies SDK failures without importing any SDK.
import type AnthropicClient from "@anthropic-ai/sdk";
import type OpenAIClient from "openai";
import { registerSdkErrors } from "./errors.ts";

let openai: Promise<typeof OpenAIClient> | undefined;
let anthropic: Promise<typeof AnthropicClient> | undefined;

export function loadOpenAI(): Promise<typeof OpenAIClient> {
  return (openai ??= import("openai").then((m) => {
    registerSdkErrors(m.default);
    return m.default;
  }));
}

export function loadAnthropic(): Promise<typeof AnthropicClient> {
  return (anthropic ??= import("@anthropic-ai/sdk").then((m) => {
    registerSdkErrors(m.default);
    return m.default;
  }));
}
