// The recent history renders each exchange once and reuses it on later turns (issue 32):
// what it shows must stay exactly what a fresh render shows, turn after turn, including a
// new message, its answering brief and the tools its turn ran.
import { describe, expect, it } from "vitest";
import { recentHistoryContributor } from "../src/context/recent-history.ts";
import type { PromptContext } from "../src/context/section.ts";
import { RuntimeHost } from "../src/host/host.ts";
import { runOnce } from "../src/host/run-once.ts";
import { reply } from "./fake-provider/server.ts";
import { tempHome } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();

describe("recent history cache", () => {
  it("shows what a fresh render shows after every turn", async () => {
    const home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    const host = await RuntimeHost.open({ home });
    try {
      const cached = recentHistoryContributor();
      const ctx = async (): Promise<PromptContext> => {
        const agent = (await host.store.agents.get("main"))!;
        const [message] = await host.store.messages.recent("main", 1);
        return {
          store: host.store,
          agent,
          message: message!,
          executionRoot: home,
          cwd: home,
          tools: [],
        };
      };
      const texts: string[] = [];
      for (let i = 0; i < 4; i++) {
        if (i % 2 === 1) {
          fake.enqueue(
            reply.tools([
              { name: "ExecCommand", arguments: { cmd: `echo ${i}` }, call_id: `c${i}` },
            ]),
            reply.text(`done ${i}`),
          );
        } else {
          fake.enqueue(reply.text(`answer ${i}`));
        }
        await runOnce(host, { text: `question ${i}`, agent_id: "main" });
        const seen = await cached.contribute(await ctx());
        expect(seen).toEqual(await recentHistoryContributor().contribute(await ctx()));
        // A second look with nothing changed is the same text.
        expect(await cached.contribute(await ctx())).toEqual(seen);
        texts.push(seen.map((s) => s.text).join("\n"));
      }
      // The history grew with the turns: the newest answers and the tools are in it.
      expect(texts.at(-1)).toContain("answer 2");
      expect(texts.at(-1)).toContain("tools: ExecCommand");
    } finally {
      await host.shutdown();
    }
  }, 60_000);
});
