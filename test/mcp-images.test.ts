// An image an MCP tool returns reaches the model on every transport. Chat Completions takes
// text only in a `tool` message, so the image follows the round's tool messages as a `user`
// message of `image_url` parts, framed as the tool's output (external evidence), and the tool
// message says so. The real server-everything's `get-tiny-image` and the scripted fake model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply } from "./fake-provider/server.ts";
import { runCli, startRuntime, tempHome, waitFor, type TestRuntime } from "./helpers/home.ts";
import { configureFakeProvider, useFakeProvider } from "./helpers/provider.ts";
import { EVERYTHING, NODE, writeMcpConfig } from "./helpers/mcp.ts";
import { lowerChatMessages } from "../src/providers/openai-chat-completions.ts";

const fake = useFakeProvider();
let rt: TestRuntime;

beforeAll(async () => {
  const home = tempHome();
  await configureFakeProvider(home, "openai_chat_completions", fake.baseUrl("openai"));
  writeMcpConfig(home, { servers: { everything: { command: NODE, args: [EVERYTHING, "stdio"] } } });
  rt = await startRuntime({ home, env: { ...process.env, HOLON_HOME: home } });
});
afterAll(async () => {
  await rt?.close();
});

describe("MCP images on Chat Completions", () => {
  it("the tool's image follows its tool message as a user message of image_url parts", async () => {
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__everything__get-tiny-image", arguments: {}, call_id: "img1" }]),
      reply.text("I see a tiny image."),
    );
    const r = await rt.req("POST", "/control/agents/main/prompt", { text: "show me" });
    expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
    await waitFor(() => fake.requests.length >= from + 2, { what: "the second request" });
    const messages = (fake.requests[from + 1]!.body as { messages: any[] }).messages;
    const at = messages.findIndex((m) => m.role === "tool" && m.tool_call_id === "img1");
    expect(at).toBeGreaterThan(0);
    expect(messages[at].content).toContain("image/png");
    expect(messages[at].content).toContain("its image follows in the next message");
    const images = messages[at + 1];
    expect(images.role).toBe("user");
    expect(images.content[0].type).toBe("text");
    expect(images.content[0].text).toContain("tool call img1");
    expect(images.content[0].text).toContain("not the operator's words");
    expect(images.content[1].type).toBe("image_url");
    expect(images.content[1].image_url.url).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/=]+$/);
  });

  it("a provider marked images: false gets the description only", async () => {
    const set = await runCli(["config", "set", "providers.fake.images", "false"], {
      env: { HOLON_HOME: rt.home },
    });
    expect(set.code, set.stderr).toBe(0);
    const from = fake.requests.length;
    fake.enqueue(
      reply.tools([{ name: "mcp__everything__get-tiny-image", arguments: {}, call_id: "img2" }]),
      reply.text("I read about an image."),
    );
    const r = await rt.req("POST", "/control/agents/main/prompt", { text: "show me again" });
    expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
    await waitFor(() => fake.requests.length >= from + 2, { what: "the second request" });
    const messages = (fake.requests[from + 1]!.body as { messages: any[] }).messages;
    const tool = messages.find((m) => m.role === "tool" && m.tool_call_id === "img2");
    expect(tool.content).toContain("image/png");
    expect(tool.content).not.toContain("follows in the next message");
    expect(JSON.stringify(messages)).not.toContain("image_url");
  });

  it("a round's tool messages stay together; its images follow them all", () => {
    const png = { mime_type: "image/png", data: "iVBORw0KGgo=" };
    const messages = lowerChatMessages({
      frame: { system_prompt: "", system_blocks: [], context_blocks: [] },
      conversation: [
        { type: "user_text", text: "go" },
        { type: "tool_call", call_id: "a", name: "t", arguments: "{}" },
        { type: "tool_call", call_id: "b", name: "t", arguments: "{}" },
        { type: "tool_result", call_id: "a", output: "A", is_error: false, images: [png] },
        { type: "tool_result", call_id: "b", output: "B", is_error: false, images: [png, png] },
        { type: "tool_call", call_id: "c", name: "t", arguments: "{}" },
        { type: "tool_result", call_id: "c", output: "C", is_error: false },
        { type: "assistant_text", text: "done" },
      ],
      tools: [],
    } as never);
    expect(
      messages.map((m: any) => `${m.role}${m.tool_call_id ? `:${m.tool_call_id}` : ""}`),
    ).toEqual([
      "user",
      "assistant",
      "tool:a",
      "tool:b",
      "user",
      "assistant",
      "tool:c",
      "assistant",
    ]);
    const images = messages[4] as any;
    expect(images.content.filter((p: any) => p.type === "image_url")).toHaveLength(3);
    expect(images.content[0].text).toContain("tool call a, b");
    expect((messages[3] as any).content).toBe("B\n[its 2 images follow in the next message]");
    expect((messages[6] as any).content).toBe("C");
  });
});
