// The loopback end of an agent's allowlist proxy. It runs as the holder of the agent's network
// namespace (see netns.ts): it listens on 127.0.0.1:<port> inside that namespace, where the
// agent's commands find it through HTTP_PROXY / ALL_PROXY, and carries each connection, byte
// for byte, to the host's proxy on a Unix socket (the proxy decides what is allowed). It keeps
// no state: when the host is away the socket refuses and the connection is closed; when the
// host is back at the same path, the next connection reaches it again.
//
// Plain JavaScript importing only Node built-ins (no TypeScript stripper, a small process).
// Arguments: <port> <socket path>. Prints `ready` once it listens.
import { connect, createServer } from "node:net";

const port = Number(process.argv[2]);
const socketPath = String(process.argv[3]);

const server = createServer((client) => {
  const upstream = connect(socketPath);
  client.pipe(upstream);
  upstream.pipe(client);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", end);
  upstream.on("error", end);
  client.on("close", end);
  upstream.on("close", end);
});
// The proxy caps connections per agent too; this only keeps a runaway from exhausting fds.
server.maxConnections = 512;
server.on("error", (err) => {
  process.stderr.write(`net-bridge: ${err.message}\n`);
  process.exit(1);
});
server.listen(port, "127.0.0.1", () => process.stdout.write("ready\n"));
