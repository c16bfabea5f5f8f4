// Workspace MCP servers' approvals live in the host's one consent store (table
// consent_grants, beside the workspace hooks' consents): an approval asked and given through
// `asks` is a grant there, and the approvals an older host kept in `mcp/approvals.json` are
// taken in once at start (the file is then renamed), still bound to the SHA-256 of the
// definition and to the references the operator saw.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RuntimeHost } from "../src/host/host.ts";
import { definitionDigest, parseDefinition } from "../src/mcp/config.ts";
import { executionBinding } from "../src/workspace/roots.ts";
import { cleanupHomes, tempHome } from "./helpers/home.ts";
import { callMcp, fixture } from "./helpers/mcp.ts";

const hosts: RuntimeHost[] = [];
afterAll(async () => {
  for (const h of hosts.splice(0)) await h.shutdown();
  cleanupHomes();
});

const env = (home: string) => ({ ...process.env, HOLON_HOME: home, HOLON_WS_VALUE: "ws-QQQ" });

async function open(home: string): Promise<RuntimeHost> {
  const host = await RuntimeHost.open({ home, env: env(home) });
  hosts.push(host);
  return host;
}

async function close(host: RuntimeHost): Promise<void> {
  hosts.splice(hosts.indexOf(host), 1);
  await host.shutdown();
}

/** The root the default agent works in (where its `.mcp.json` is read). */
async function rootOf(home: string): Promise<string> {
  const host = await open(home);
  const root = executionBinding(await host.agents.get("main")).execution_root;
  await close(host);
  return root;
}

const good = fixture("ok", { env: { SOME_KEY: "${HOLON_WS_VALUE}" } });
const other = fixture("ok");

describe("an old mcp/approvals.json is taken into the consent store", () => {
  it("approvals and denials survive the move, bound to the same digest; the file is renamed", async () => {
    const home = tempHome();
    const root = await rootOf(home);
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, ".mcp.json"), JSON.stringify({ mcpServers: { good, other } }));
    const digest = (d: unknown) => definitionDigest(parseDefinition("x", d));
    mkdirSync(join(home, "mcp"), { recursive: true, mode: 0o700 });
    const file = join(home, "mcp", "approvals.json");
    writeFileSync(
      file,
      JSON.stringify({
        approvals: [
          {
            workspace: root,
            server: "good",
            sha256: digest(good),
            references: ["${HOLON_WS_VALUE}"],
            decision: "approved",
            ask_id: "ask_old1",
            decided_at: "2026-01-01T00:00:00.000Z",
          },
          {
            workspace: root,
            server: "other",
            sha256: digest(other),
            references: [],
            decision: "denied",
            ask_id: "ask_old2",
            decided_at: "2026-01-01T00:00:00.000Z",
          },
          { workspace: root, server: "junk", sha256: "not-a-digest", decision: "approved" },
        ],
      }),
      { mode: 0o600 },
    );

    const host = await open(home);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(`${file}.migrated`)).toBe(true);
    const grant = await host.services.store.approvals.getGrant(
      "mcp_server",
      root,
      "good",
      digest(good),
    );
    expect(grant).toMatchObject({ state: "granted", ask_id: "ask_old1" });
    const states = Object.fromEntries(
      (await host.services.mcp.status(await host.agents.get("main"))).map((v) => [
        v.name,
        v.consent,
      ]),
    );
    expect(states).toEqual({ good: "approved", other: "denied" });
    // The approved definition's variable is withheld from commands, as before.
    expect(await host.services.mcp.referencedEnvNames()).toContain("HOLON_WS_VALUE");
    // It runs, with the reference the approval listed expanded; nothing new is asked.
    const call = await callMcp(host, "mcp__good__ping", {});
    expect(call.result.text, call.rendered).toContain("pong from ping");
    expect(await host.services.asks.list({ agent_id: "main" })).toEqual([]);

    // An edited definition is another digest: pending, asked through the one store.
    const edited = fixture("ok", { env: { SOME_KEY: "${HOLON_WS_VALUE}", MORE: "1" } });
    writeFileSync(join(root, ".mcp.json"), JSON.stringify({ mcpServers: { good: edited, other } }));
    await host.services.mcp.catalog(await host.agents.get("main"));
    const asks = await host.services.asks.list({ agent_id: "main" });
    expect(asks).toHaveLength(1);
    expect(asks[0]!.details).toMatchObject({
      approval: "consent",
      subject: "mcp_server",
      mcp_consent: { server: "good", sha256: digest(edited) },
    });
    expect(asks[0]!.detail).toContain("${HOLON_WS_VALUE}");
    // The operator sees literal values hidden in the stored definition.
    expect(JSON.stringify(asks[0]!.details.definition)).toContain("<hidden>");
    expect(
      (await host.services.store.approvals.getGrant("mcp_server", root, "good", digest(edited)))
        ?.state,
    ).toBe("pending");
    await host.services.asks.decide(
      asks[0]!.id,
      { decision: "approve" },
      {
        kind: "operator",
        via: "control",
      },
    );
    expect(
      (await host.services.mcp.status(await host.agents.get("main"))).find((v) => v.name === "good")
        ?.consent,
    ).toBe("approved");

    // The next start finds nothing to take in and keeps every decision.
    await close(host);
    const again = await open(home);
    expect(existsSync(file)).toBe(false);
    const after = Object.fromEntries(
      (await again.services.mcp.status(await again.agents.get("main"))).map((v) => [
        v.name,
        v.consent,
      ]),
    );
    expect(after).toEqual({ good: "approved", other: "denied" });
    await close(again);
  });

  it("an unreadable approvals file is set aside and approves nothing", async () => {
    const home = tempHome();
    const root = await rootOf(home);
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, ".mcp.json"), JSON.stringify({ mcpServers: { good } }));
    mkdirSync(join(home, "mcp"), { recursive: true, mode: 0o700 });
    const file = join(home, "mcp", "approvals.json");
    writeFileSync(file, "{ not json", { mode: 0o600 });
    const host = await open(home);
    expect(existsSync(file)).toBe(false);
    expect(readFileSync(`${file}.migrated`, "utf8")).toBe("{ not json");
    const view = await host.services.mcp.status(await host.agents.get("main"));
    expect(view.map((v) => [v.name, v.consent])).toEqual([["good", "pending"]]);
    await close(host);
  });
});
