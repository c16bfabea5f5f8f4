// What every route group receives: the host whose services it calls, the event hub for
// streams, and the server's options. Kept apart from app.ts so route modules never import
// the module that mounts them.
import type { RuntimeHost } from "../host/host.ts";
import type { EventHub } from "./sse.ts";

export type AppOptions = {
  /** The control token (configured or generated); the guard in server.ts enforces it. */
  token?: string | undefined;
  /** Reported by /handshake (`runtime.advertise_url`). */
  advertiseUrl?: string | null;
  heartbeatMs?: number;
  /** Called after POST /control/runtime/shutdown has been answered. */
  onShutdown?: () => void;
  /** Describes where the server listens, for /handshake and runtime status. */
  listen?: { http_addr?: string | null; socket_path?: string | null };
};

export type AppContext = {
  host: RuntimeHost;
  hub: EventHub;
  opts: AppOptions;
};
