// Bounds on what an MCP server may send, shared by the stdio transport and the HTTP fetch
// (a module of its own so the host can read them without loading the SDK).

/** The largest message (stdio line, HTTP response) a server may send: a 20 MB result is read, then capped as output. */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
