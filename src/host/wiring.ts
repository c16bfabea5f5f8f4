// Assembles a host's collaborators (turn executor, model state) for the production
// entry points (`serve`, in-process `run`). Tests can open a host with their own.
import type { HostOptions } from "./host.ts";

export async function buildHostOptions(home: string): Promise<HostOptions> {
  return { home };
}
