// What an MCP client may do to the runtime, and nothing more: the operations Holon's MCP
// server exposes, and their one implementation over the control plane's routes. The stdio
// server (`holon mcp serve`) runs them through the project's HTTP client; the host's `/mcp`
// route runs them through its own app in process. Either way every operation is one fixed
// route with each id escaped as a single path segment, so no argument can name another
// route: deciding asks, budgets, config, permissions, workspaces, deletion and URL templates
// are not reachable from here at all.

/** One control-plane call: resolves with the route's JSON, throws an `OperationError`. */
export type ControlCall = (
  method: "GET" | "POST",
  path: string,
  body?: unknown,
  signal?: AbortSignal,
) => Promise<Record<string, unknown>>;

/** A refused or failed operation, with the runtime's stable error kind. */
export class OperationError extends Error {
  readonly kind: string;
  readonly hint: string | undefined;
  constructor(kind: string, message: string, hint?: string) {
    super(message);
    this.kind = kind;
    this.hint = hint;
  }
}

export type Priority = "next" | "normal" | "background";

export interface HolonOperations {
  listAgents(): Promise<Record<string, unknown>>;
  /** `template` is a local template id (never a path or URL). */
  createAgent(agentId: string, template?: string): Promise<Record<string, unknown>>;
  sendPrompt(
    agentId: string,
    prompt: { text: string; actorId: string; priority?: Priority | undefined },
  ): Promise<Record<string, unknown>>;
  addWorkItem(
    agentId: string,
    item: { objective: string; actorId: string },
  ): Promise<Record<string, unknown>>;
  status(agentId: string): Promise<Record<string, unknown>>;
  briefs(agentId: string, limit: number): Promise<Record<string, unknown>>;
  workItem(agentId: string, workItemId: string): Promise<Record<string, unknown>>;
  nextBrief(
    agentId: string,
    opts: { messageId?: string | undefined; after?: string | undefined; waitMs: number },
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>>;
  transcript(agentId: string, limit: number): Promise<Record<string, unknown>>;
  stop(agentId: string): Promise<Record<string, unknown>>;
}

/** One path segment: `encodeURIComponent` leaves `.` alone, so `..` is refused outright. */
function seg(id: string): string {
  if (id === "" || id === "." || id === "..") {
    throw new OperationError("invalid_request", `'${id}' is not an id`);
  }
  return encodeURIComponent(id);
}

export function controlPlaneOperations(call: ControlCall): HolonOperations {
  const agent = (id: string) => `/agents/${seg(id)}`;
  const control = (id: string) => `/control/agents/${seg(id)}`;
  return {
    listAgents: async () => call("GET", "/agents/list"),
    createAgent: async (agentId, template) =>
      call("POST", `${control(agentId)}/create`, template === undefined ? {} : { template }),
    sendPrompt: async (agentId, p) =>
      call("POST", `${control(agentId)}/prompt`, {
        text: p.text,
        actor_id: p.actorId,
        surface: "mcp_server",
        ...(p.priority ? { priority: p.priority } : {}),
      }),
    addWorkItem: async (agentId, w) =>
      call("POST", `${control(agentId)}/work-items`, {
        objective: w.objective,
        actor_id: w.actorId,
        surface: "mcp_server",
      }),
    status: async (agentId) => call("GET", `${agent(agentId)}/status`),
    briefs: async (agentId, limit) => call("GET", `${agent(agentId)}/briefs?limit=${limit}`),
    workItem: async (agentId, workItemId) =>
      call("GET", `${agent(agentId)}/work-items/${seg(workItemId)}`),
    nextBrief: async (agentId, o, signal) => {
      const q = new URLSearchParams({ wait_ms: String(o.waitMs) });
      if (o.messageId) q.set("message_id", o.messageId);
      if (o.after) q.set("after", o.after);
      return call("GET", `${agent(agentId)}/briefs/next?${q}`, undefined, signal);
    },
    transcript: async (agentId, limit) =>
      call("GET", `${agent(agentId)}/transcript?limit=${limit}`),
    stop: async (agentId) => call("POST", `${control(agentId)}/control`, { action: "stop" }),
  };
}
