// The soak's model: the scripted fake provider in its own process, answering at once. A
// prompt whose text holds "[exec]" gets one ExecCommand round (`true`) before its answer;
// one holding "[task]" gets an ExecCommand (`sleep 1`) that yields at once, so it goes on as a
// background task; everything else is answered with text in one round. Requests are not kept (a soak sends
// hundreds of thousands).
//
// IPC protocol: worker → { type: "ready", baseUrl } once listening; → { type: "stats",
// requests } when asked with { type: "stats" }. SIGTERM ends it.
import { reply, startFakeProvider, type RecordedRequest } from "../../test/fake-provider/server.ts";

const USAGE = { input_tokens: 1200, output_tokens: 40 };

/** The text of the newest user item and whether a tool result came after it. */
function lastTurnState(body: { input?: unknown }): { text: string; afterTool: boolean } {
  const input = Array.isArray(body.input) ? (body.input as Record<string, unknown>[]) : [];
  const last = input.at(-1);
  if (last?.type === "function_call_output") return { text: "", afterTool: true };
  let text = "";
  const content = last?.content;
  if (typeof content === "string") text = content;
  else if (Array.isArray(content)) {
    for (const c of content as { text?: unknown }[]) {
      if (typeof c.text === "string") text += c.text;
    }
  }
  return { text, afterTool: false };
}

let answered = 0;
let calls = 0;
const fake = await startFakeProvider();
fake.setFallback((req: RecordedRequest) => {
  fake.requests.length = 0;
  answered++;
  const { text, afterTool } = lastTurnState(req.body ?? {});
  if (!afterTool && text.includes("[exec]")) {
    calls++;
    return reply.tools(
      [{ name: "ExecCommand", arguments: { cmd: "true" }, call_id: `soak_${calls}` }],
      {
        usage: USAGE,
      },
    );
  }
  if (!afterTool && text.includes("[task]")) {
    calls++;
    return reply.tools(
      [
        {
          name: "ExecCommand",
          arguments: { cmd: "sleep 1", yield_time_ms: 0, duplicate_policy: "start_new" },
          call_id: `soak_${calls}`,
        },
      ],
      { usage: USAGE },
    );
  }
  return reply.text("Noted; nothing else to do for this one.", USAGE);
});

process.on("message", (m: { type?: string }) => {
  if (m?.type === "stats") process.send!({ type: "stats", requests: answered });
});
process.on("SIGTERM", () => {
  void fake.close().finally(() => process.exit(0));
});
process.send!({ type: "ready", baseUrl: fake.baseUrl("openai") });
