// The stdio transport of an MCP server this host owns. The SDK's own stdio transport starts
// the process itself; this one is handed a process the host started (confined by the
// sandbox, in its own process group, with a scrubbed environment) so the host keeps its pid
// and can kill the whole tree. It reads newline-delimited JSON-RPC from stdout with two
// guards: a line that is not JSON-RPC is skipped and remembered (a server that logs to
// stdout still works, and a startup failure can say what it printed), and a line longer than
// the message cap closes the session instead of growing a buffer without bound.
import type { ChildProcess } from "node:child_process";
import { JSONRPCMessageSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

import { MAX_MESSAGE_BYTES } from "./limits.ts";
const MAX_NOTED = 4;
const STDERR_KEEP = 4_096;

export class ChildStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;

  readonly #child: ChildProcess;
  #chunks: Buffer[] = [];
  #size = 0;
  #closed = false;
  /** Lines that were not JSON-RPC (first few, clipped): said when the server fails to start. */
  readonly garbage: string[] = [];
  garbageCount = 0;
  /** The tail of what the server wrote on stderr. */
  stderrTail = "";
  /** Why the session ended, when the transport ended it. */
  failure: string | null = null;

  constructor(child: ChildProcess) {
    this.#child = child;
  }

  async start(): Promise<void> {
    const child = this.#child;
    child.stdout!.on("data", (chunk: Buffer) => this.#read(chunk));
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_KEEP);
    });
    child.stdin!.on("error", () => {}); // a dead server: the exit handler reports it
    child.once("exit", (code, signal) => {
      if (!this.failure) {
        this.failure = signal ? `the server was killed (${signal})` : `the server exited (${code})`;
      }
      this.#finish();
    });
    child.once("error", (err) => {
      this.failure = `the server could not start: ${err.message}`;
      this.onerror?.(err);
      this.#finish();
    });
  }

  #read(chunk: Buffer): void {
    if (this.#closed) return;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      if (nl < 0) break;
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.#size + piece.length > MAX_MESSAGE_BYTES) return this.#tooLarge();
      let line: Buffer;
      if (this.#chunks.length === 0) line = piece;
      else {
        this.#chunks.push(piece);
        line = Buffer.concat(this.#chunks);
        this.#chunks = [];
        this.#size = 0;
      }
      this.#line(line);
      if (this.#closed) return;
    }
    const rest = chunk.subarray(start);
    if (rest.length === 0) return;
    if (this.#size + rest.length > MAX_MESSAGE_BYTES) return this.#tooLarge();
    this.#chunks.push(Buffer.from(rest));
    this.#size += rest.length;
  }

  #line(buf: Buffer): void {
    const text = buf.toString("utf8").replace(/\r$/, "");
    if (text.trim() === "") return;
    let msg: JSONRPCMessage;
    try {
      msg = JSONRPCMessageSchema.parse(JSON.parse(text));
    } catch {
      this.garbageCount++;
      if (this.garbage.length < MAX_NOTED) this.garbage.push(text.slice(0, 200));
      return;
    }
    this.onmessage?.(msg);
  }

  #tooLarge(): void {
    this.failure = `the server sent a message larger than ${MAX_MESSAGE_BYTES} bytes`;
    this.#chunks = [];
    this.#size = 0;
    this.onerror?.(new Error(this.failure));
    void this.close();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) throw new Error(this.failure ?? "the server is not running");
    const stdin = this.#child.stdin!;
    const line = JSON.stringify(message) + "\n";
    await new Promise<void>((resolve, reject) => {
      stdin.write(line, (err) => (err ? reject(err) : resolve()));
    });
  }

  async close(): Promise<void> {
    try {
      this.#child.stdin?.end();
    } catch {
      // already closed
    }
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}
