// The request function the client commands share. The client module loads only when a
// command runs, so `holon --help` and commands that need no host stay cheap.
import type { ClientFlags } from "./connect.ts";

export type Requester = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** A request function on the running host; a failure prints as a CLI error. */
export async function requester(flags: ClientFlags): Promise<Requester> {
  const { call, connect } = await import("./connect.ts");
  const c = connect(flags);
  return <T>(method: string, path: string, body?: unknown) =>
    call(() => c.call<T>(method, path, body));
}
