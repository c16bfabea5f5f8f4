// One host for a whole test file, on a fresh home whose provider is the scripted fake one
// (configured through the CLI, as a user would), with the few moves most end-to-end scenarios
// make: run the CLI against that home, prompt `main`, wait until a prompt's turn has settled.
import { afterAll, beforeAll, expect } from "vitest";
import type { FakeProvider } from "../fake-provider/server.ts";
import {
  runCli,
  startRuntime,
  tempHome,
  waitFor,
  type CliResult,
  type TestRuntime,
} from "./home.ts";
import { configureFakeProvider } from "./provider.ts";

export type AgentHost = {
  /** Set once the file's beforeAll has run. */
  readonly rt: TestRuntime;
  readonly home: string;
  /** The real `holon` binary against this home. */
  cli(...args: string[]): Promise<CliResult>;
  /** Prompt `main`; returns the admitted message's id. */
  prompt(text: string): Promise<string>;
  /** Wait until that message is processed and `main` is no longer running a turn. */
  settled(messageId: string): Promise<void>;
  /** Stop the host and start a new one on the same home; returns the new runtime. */
  restart(): Promise<TestRuntime>;
};

/**
 * Start the host in beforeAll (after `prepare` has configured the home, e.g. MCP servers) and
 * close it in afterAll. `env` is added to the host's environment.
 */
export function useAgentHost(
  fake: FakeProvider,
  opts: {
    prepare?: (home: string, cli: AgentHost["cli"]) => void | Promise<void>;
    env?: Record<string, string>;
  } = {},
): AgentHost {
  let rt: TestRuntime | undefined;
  let home: string | undefined;
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error("the agent host starts in beforeAll");
    return v;
  };
  const cli = (...args: string[]) => runCli(args, { env: { HOLON_HOME: started(home) } });

  const start = async (dir: string) =>
    await startRuntime({ home: dir, env: { ...process.env, HOLON_HOME: dir, ...opts.env } });

  beforeAll(async () => {
    home = tempHome();
    await configureFakeProvider(home, "openai_responses", fake.baseUrl("openai"));
    await opts.prepare?.(home, cli);
    rt = await start(home);
  });
  afterAll(async () => {
    await rt?.close();
  });

  return {
    get rt() {
      return started(rt);
    },
    get home() {
      return started(home);
    },
    cli,
    async prompt(text) {
      const r = await started(rt).req("POST", "/control/agents/main/prompt", { text });
      expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
      return r.json.message_id ?? r.json.message?.id;
    },
    async settled(messageId) {
      const host = started(rt).host;
      await waitFor(
        async () => {
          const m = await host.store.messages.get(messageId);
          return (
            m?.status === "processed" && (await host.agents.get("main")).status !== "awake_running"
          );
        },
        { what: `message ${messageId} processed`, timeoutMs: 30_000 },
      );
    },
    async restart() {
      await started(rt).close();
      rt = undefined;
      rt = await start(started(home));
      return rt;
    },
  };
}
