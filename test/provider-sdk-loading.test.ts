// The provider SDKs load on first use: a host that talks to one family never holds the
// other (each SDK is some 20 MB of RSS and tens of milliseconds of start-up). Watched from
// outside, on a real `holon run`: a module-resolution hook reports each SDK Node resolves.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { HOLON_BIN, runCli, tempHome } from "./helpers/home.ts";
import { reply } from "./fake-provider/server.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

const HOOKS = `import { registerHooks } from "node:module";
registerHooks({
  resolve(specifier, context, next) {
    if (specifier === "openai" || specifier === "@anthropic-ai/sdk")
      process.stderr.write("sdk-resolved:" + specifier + "\\n");
    return next(specifier, context);
  },
});
`;

async function runWith(transport: "openai_responses" | "anthropic_messages"): Promise<string> {
  const home = tempHome();
  const wire = transport === "anthropic_messages" ? "anthropic" : "openai";
  await configureFakeProvider(home, transport, fake.baseUrl(wire));
  const hooks = join(home, "sdk-hooks.mjs");
  writeFileSync(hooks, HOOKS);
  fake.enqueue(reply.text("hello back"));
  const r = await runCli([], {
    exec: [process.execPath, "--import", hooks, HOLON_BIN, "run", "--home", home, "hello"],
  });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain("hello back");
  return r.stderr;
}

describe("provider SDKs", () => {
  it("a run against an OpenAI-shaped provider loads the OpenAI SDK only", async () => {
    const stderr = await runWith("openai_responses");
    expect(stderr).toContain("sdk-resolved:openai");
    expect(stderr).not.toContain("sdk-resolved:@anthropic-ai/sdk");
  });

  it("a run against an Anthropic provider loads the Anthropic SDK only", async () => {
    const stderr = await runWith("anthropic_messages");
    expect(stderr).toContain("sdk-resolved:@anthropic-ai/sdk");
    expect(stderr).not.toContain("sdk-resolved:openai");
  });
});
