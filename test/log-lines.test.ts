// A turn's line in the runtime log is short whatever the model said: ids, outcome, durations
// and token counts at info; the whole payload, reply included, only at debug
// (HOLON_LOG_LEVEL). A real turn against the scripted fake provider, logged by the same
// subscription `holon serve` uses, into two real log files (one per level).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import type { EventPayload } from "../src/domain/events.ts";
import { logEvents, logLevel, openLog } from "../src/host/log.ts";
import { logLimits } from "../src/host/log-rotation.ts";
import { reply } from "./fake-provider/server.ts";
import { startRuntime, tempHome, waitFor } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";

const fake = useFakeProvider();
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of closers.splice(0)) await c();
});

const flushed = (log: Logger) => new Promise<void>((resolve) => log.flush(() => resolve()));

type Line = Record<string, unknown> & { level: number; msg: string; event?: string };

function lines(home: string): { raw: string; line: Line }[] {
  let text = "";
  try {
    text = readFileSync(join(home, "logs", "holon.log"), "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter(Boolean)
    .map((raw) => ({ raw, line: JSON.parse(raw) as Line }));
}

/** Bytes a turn's info line may take, however long the reply. */
const TURN_LINE_BYTES = 512;

describe("the runtime log's lines", () => {
  it("a turn with a 200 KB reply logs a short info line; its full text only at debug", async () => {
    const rt = await startRuntime();
    closers.push(() => rt.close());
    await configureFakeProvider(rt.home, "openai_responses", fake.baseUrl("openai"));
    const info = openLog(rt.home, logLimits(rt.home), undefined, "info");
    const debugHome = tempHome("holon-log-debug-");
    const debug = openLog(debugHome, logLimits(debugHome), undefined, "debug");
    const unsubscribe = [logEvents(rt.host.store, info), logEvents(rt.host.store, debug)];
    closers.push(async () => unsubscribe.forEach((u) => u()));

    const marker = "the-long-reply ";
    const text = marker.repeat(Math.ceil(200_000 / marker.length));
    fake.enqueue(reply.text(text, { input_tokens: 1234, output_tokens: 56789 }));
    const sent = await rt.req("POST", "/agents/main/enqueue", { text: "say a lot" });
    expect(sent.status).toBe(202);
    await waitFor(
      async () => {
        await flushed(info);
        await flushed(debug);
        return lines(rt.home).some((l) => l.line.event === "turn_terminal");
      },
      { what: "the turn's log line" },
    );
    const event = (await rt.host.store.events.after("main", 0, 10_000)).find(
      (e) => e.type === "turn_terminal",
    )!;
    const stored = { ...event, payload: event.payload as EventPayload<"turn_terminal"> };
    expect(stored.payload.last_assistant_message.length).toBeGreaterThan(100_000);

    // Info: the ids, outcome, durations and token counts, in a few hundred bytes.
    const turn = lines(rt.home).find((l) => l.line.event === "turn_terminal")!;
    expect(Buffer.byteLength(turn.raw)).toBeLessThan(TURN_LINE_BYTES);
    expect(turn.line).toMatchObject({
      level: 30,
      agent_id: "main",
      event_seq: stored.event_seq,
      run_id: stored.payload.run_id,
      turn_index: stored.payload.turn_index,
      outcome: "completed",
      model_rounds: 1,
      input_tokens: 1234,
      output_tokens: 56789,
      reply_chars: stored.payload.last_assistant_message.length,
    });
    expect(typeof turn.line.duration_ms).toBe("number");
    expect(turn.raw).not.toContain(marker);
    // No info line of the turn carries the reply.
    for (const l of lines(rt.home)) expect(l.raw).not.toContain(marker);

    // Debug: the same short line, then the whole payload with the reply as the model wrote it.
    const debugLines = lines(debugHome).filter((l) => l.line.event === "turn_terminal");
    expect(debugLines.map((l) => l.line.level)).toEqual([30, 20]);
    expect(Buffer.byteLength(debugLines[0]!.raw)).toBeLessThan(TURN_LINE_BYTES);
    const full = debugLines[1]!.line.payload as { last_assistant_message: string };
    expect(full.last_assistant_message).toBe(stored.payload.last_assistant_message);
  });

  it("HOLON_LOG_LEVEL picks the level; unset or unknown is info", () => {
    const cases: [string | undefined, string][] = [
      [undefined, "info"],
      ["debug", "debug"],
      [" WARN ", "warn"],
      ["silent", "silent"],
      ["loud", "info"],
      ["", "info"],
    ];
    for (const [value, level] of cases) {
      const env = value === undefined ? {} : { HOLON_LOG_LEVEL: value };
      expect(logLevel(env), String(value)).toBe(level);
    }
  });
});
