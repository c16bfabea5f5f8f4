// The official provider SDKs, each loaded the first time a transport of its family sends.
// A host that only ever talks to one family never holds the other (loading both costs some
// 25 MB of RSS and 90 ms at start-up; most hosts use one). Loading an SDK also registers its
// error classes with errors.ts, which classifies SDK failures without importing any SDK.
import type AnthropicClient from "@anthropic-ai/sdk";
import type OpenAIClient from "openai";
import { registerSdkErrors, type SdkErrors } from "./errors.ts";

/** A loader that imports an SDK once, registering its error classes as it arrives. */
function lazySdk<T extends SdkErrors>(load: () => Promise<{ default: T }>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () =>
    (loaded ??= load().then((m) => {
      registerSdkErrors(m.default);
      return m.default;
    }));
}

export const loadOpenAI = lazySdk<typeof OpenAIClient>(() => import("openai"));
export const loadAnthropic = lazySdk<typeof AnthropicClient>(() => import("@anthropic-ai/sdk"));
