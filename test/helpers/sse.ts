// A minimal SSE reader for tests: yields parsed frames from a fetch response.
export type SseFrame = { id?: string; event: string; data: string };

export async function openSse(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ frames: AsyncGenerator<SseFrame>; close(): void; status: number }> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { accept: "text/event-stream", ...headers },
    signal: controller.signal,
  });
  async function* frames(): AsyncGenerator<SseFrame> {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buf += decoder.decode(value, { stream: true });
        let idx: number;
        while ((idx = buf.indexOf("\n\n")) >= 0) {
          const raw = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          const frame: SseFrame = { event: "message", data: "" };
          const data: string[] = [];
          for (const line of raw.split("\n")) {
            if (line.startsWith("id: ")) frame.id = line.slice(4);
            else if (line.startsWith("event: ")) frame.event = line.slice(7);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (data.length === 0) continue; // comments and heartbeats
          frame.data = data.join("\n");
          yield frame;
        }
      }
    } catch (err) {
      if (!controller.signal.aborted) throw err;
    }
  }
  return { frames: frames(), close: () => controller.abort(), status: res.status };
}
