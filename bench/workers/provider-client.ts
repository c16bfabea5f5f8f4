// The provider side of a turn round without the runtime: the OpenAI SDK, configured as Holon
// configures it (SDK retries off, Holon's fetch), sending the same request body over and over
// to the fake provider, reading each reply's event stream. Used by the turn benchmark to show
// the floor of a model round.
//   node provider-client.ts <base url> <request body JSON file> <count>
import { readFileSync } from "node:fs";
import OpenAI from "openai";
import { providerFetch } from "../../src/providers/http-fetch.ts";

const [baseURL, bodyFile, countArg] = process.argv.slice(2);
const body = JSON.parse(readFileSync(bodyFile!, "utf8"));
const client = new OpenAI({
  apiKey: "bench",
  baseURL,
  maxRetries: 0,
  logLevel: "off",
  fetch: providerFetch,
});
// The request asks for SSE: read each stream to its end, as a round does (the SDK returns the
// stream object once the head is in; a floor that never read the events left out their
// parsing).
for (let i = 0; i < Number(countArg); i++) {
  const stream = (await client.responses.create(body)) as unknown as AsyncIterable<unknown>;
  for await (const _event of stream);
}
