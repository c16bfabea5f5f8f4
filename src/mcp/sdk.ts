// The MCP SDK, loaded on the first server start rather than with the host: a host whose
// servers are never used (or that has none) does not pay for the SDK's modules in start time
// or memory. Everything in src/mcp/ that needs the SDK at run time takes it from here.
export type Sdk = Awaited<ReturnType<typeof load>>;

async function load() {
  const [client, http, sse, types, stdio, protocol] = await Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    import("@modelcontextprotocol/sdk/client/sse.js"),
    import("@modelcontextprotocol/sdk/types.js"),
    import("./stdio.ts"),
    import("@modelcontextprotocol/sdk/shared/protocol.js"),
  ]);
  return {
    Client: client.Client,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    SSEClientTransport: sse.SSEClientTransport,
    ErrorCode: types.ErrorCode,
    McpError: types.McpError,
    ListRootsRequestSchema: types.ListRootsRequestSchema,
    ElicitRequestFormParamsSchema: types.ElicitRequestFormParamsSchema,
    Protocol: protocol.Protocol,
    ToolListChangedNotificationSchema: types.ToolListChangedNotificationSchema,
    ChildStdioTransport: stdio.ChildStdioTransport,
  };
}

let loading: Promise<Sdk> | undefined;
let loaded: Sdk | undefined;

export function loadSdk(): Promise<Sdk> {
  loading ??= load().then((sdk) => (loaded = sdk));
  return loading;
}

/** The SDK once some server started (every caller after a start may rely on it). */
export function sdk(): Sdk {
  if (!loaded) throw new Error("the MCP SDK is not loaded yet");
  return loaded;
}
