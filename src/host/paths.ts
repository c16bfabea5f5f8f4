// Where Holon keeps its state. One HOLON_HOME holds one runtime's config,
// credentials, database, agent homes and run files.
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** `--home` flag, then HOLON_HOME, then ~/.holon. */
export function resolveHome(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  if (env.HOLON_HOME) return resolve(env.HOLON_HOME);
  return join(homedir(), ".holon");
}

export function homePaths(home: string) {
  return {
    home,
    config: join(home, "config.json"),
    credentials: join(home, "credentials.json"),
    database: join(home, "holon.db"),
    runDir: join(home, "run"),
    runtimeFile: join(home, "run", "runtime.json"),
    lockFile: join(home, "run", "host.lock"),
    socket: join(home, "run", "holon.sock"),
    logsDir: join(home, "logs"),
    agentsDir: join(home, "agents"),
  };
}

export function agentHomeDir(home: string, agentId: string): string {
  return join(home, "agents", agentId);
}
