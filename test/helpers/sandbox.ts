// Whether this machine can run the sandbox tests: bubblewrap must be installed and work. In
// CI (CI set) its absence fails the tests instead of skipping them (.ci/run installs it).
import { probeSandbox } from "../../src/sandbox/probe.ts";

export function sandboxAvailable(): boolean {
  const probe = probeSandbox("bwrap");
  if (probe.available) return true;
  if (process.env["CI"]) throw new Error(`CI must run the sandbox tests: ${probe.reason}`);
  process.stderr.write(`sandbox tests skipped: ${probe.reason}\n`);
  return false;
}
