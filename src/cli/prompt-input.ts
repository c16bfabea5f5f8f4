// Where the text of `holon prompt` and `holon run` comes from: the words on the command line,
// standard input (`-`), or a file (`--file`). Every path has the same limit, the host's
// request cap (256 KiB for the JSON request that carries the prompt), checked here before
// anything is sent or a runtime is opened. Bytes that are not UTF-8 are replaced, and said so.
import { openSync, readSync, closeSync, fstatSync } from "node:fs";
import { MAX_BODY_BYTES } from "../http/support.ts";
import { CliError } from "./output.ts";

export type PromptSource = { words: string[]; file?: string | undefined };

/** The prompt's text, from exactly one of: words, `-` (stdin), `--file`. */
export async function readPrompt(source: PromptSource): Promise<string> {
  const stdin = source.words.length === 1 && source.words[0] === "-";
  if (source.file !== undefined && source.words.length > 0) {
    throw new CliError("give the prompt as words, as - (standard input) or with --file, not both");
  }
  let text: string;
  if (source.file !== undefined) text = decode(readFileCapped(source.file), source.file);
  else if (stdin) text = decode(await readStdinCapped(), "standard input");
  else text = source.words.join(" ");
  if (!text.trim()) throw new CliError("the prompt is empty");
  return text;
}

/**
 * Refuse, in one line, a prompt whose request would exceed the host's cap. `body` is the
 * request as it would be sent (the in-process path checks the same body it would have sent).
 */
export function checkPromptSize(text: string, body: unknown): void {
  const sent = Buffer.byteLength(JSON.stringify(body));
  if (sent <= MAX_BODY_BYTES) return;
  throw new CliError(
    `the prompt is ${kib(Buffer.byteLength(text))} (${kib(sent)} as the JSON request); ` +
      `the limit is ${kib(MAX_BODY_BYTES)} per request, so nothing was sent`,
  );
}

function kib(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** A file bigger than the cap is refused from its size, without reading it all. */
function readFileCapped(path: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new CliError(
      code === "ENOENT"
        ? `--file ${path} does not exist`
        : `--file ${path} cannot be read (${code ?? (err as Error).message})`,
    );
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new CliError(`--file ${path} is a directory`);
    return readCapped((buf) => readSync(fd, buf), `--file ${path}`);
  } finally {
    closeSync(fd);
  }
}

/** Read at most one byte past the cap; more than that is refused without reading the rest. */
function readCapped(read: (buf: Buffer) => number, what: string): Buffer {
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const buf = Buffer.alloc(64 * 1024);
    const n = read(buf);
    if (n === 0) break;
    chunks.push(buf.subarray(0, n));
    size += n;
    if (size > MAX_BODY_BYTES) tooBig(what);
  }
  return Buffer.concat(chunks, size);
}

async function readStdinCapped(): Promise<Buffer> {
  if (process.stdin.isTTY) {
    process.stderr.write("holon: reading the prompt from standard input (end it with Ctrl-D)\n");
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const b = chunk as Buffer;
    chunks.push(b);
    size += b.length;
    if (size > MAX_BODY_BYTES) {
      process.stdin.destroy();
      tooBig("standard input");
    }
  }
  return Buffer.concat(chunks, size);
}

function tooBig(what: string): never {
  throw new CliError(
    `the prompt from ${what} is more than ${kib(MAX_BODY_BYTES)}; the limit is ${kib(MAX_BODY_BYTES)} per request, so nothing was sent`,
  );
}

function decode(bytes: Buffer, what: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    process.stderr.write(
      `holon: warning: ${what} is not valid UTF-8; the invalid bytes were replaced with U+FFFD\n`,
    );
    return new TextDecoder("utf-8").decode(bytes);
  }
}
