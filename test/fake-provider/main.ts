// The scripted fake provider as a process of its own, for smoke tests of an installed
// package: `node test/fake-provider/main.ts [text]` listens on 127.0.0.1 (a free port),
// prints one JSON line `{"openai": "<base url>", "anthropic": "<base url>"}` on stdout, and
// answers every model request with `text` (default "smoke ok") until SIGTERM or stdin closes.
import { reply, startFakeProvider } from "./server.ts";

const text = process.argv[2] ?? "smoke ok";
const fake = await startFakeProvider();
fake.setFallback(() => reply.text(text));
process.stdout.write(
  JSON.stringify({ openai: fake.baseUrl("openai"), anthropic: fake.baseUrl("anthropic") }) + "\n",
);
const stop = () => void fake.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.resume();
