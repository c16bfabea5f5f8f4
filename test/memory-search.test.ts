// MemorySearch and MemoryGet against a real host and real index files: English, Chinese and
// mixed queries over memory files, briefs, episodes and work items; exact bodies back from
// MemoryGet with its bounds; bad handles; hash-check repair of edited memory files; the
// dirty marker and a damaged index file; workspace scoping.
import { afterAll, describe, expect, it } from "vitest";
import { mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RuntimeHost } from "../src/host/host.ts";
import { buildRegistry } from "../src/tools/builtin.ts";
import { dispatch, type ToolContext } from "../src/tools/registry.ts";
import type { EpisodeRecord } from "../src/domain/memory.ts";
import { createBrief } from "../src/agent/briefs.ts";
import { expandTerms, indexPaths } from "../src/memory/search.ts";
import { cleanupHomes, tempHome } from "./helpers/home.ts";
import { toolContext } from "./helpers/tool-context.ts";

const registry = buildRegistry();
const hosts: RuntimeHost[] = [];
afterAll(async () => {
  for (const host of hosts.splice(0)) await host.shutdown();
  cleanupHomes();
});

async function openHost(): Promise<RuntimeHost> {
  const home = tempHome();
  const host = await RuntimeHost.open({ home, env: { ...process.env, HOLON_HOME: home } });
  hosts.push(host);
  return host;
}

async function ctxFor(host: RuntimeHost): Promise<ToolContext> {
  return await toolContext(host);
}

async function call(host: RuntimeHost, name: string, args: Record<string, unknown>) {
  const out = await dispatch(registry, name, JSON.stringify(args), await ctxFor(host));
  return { ...out, result: out.canonical.result as any, error: out.canonical.error };
}

const SELF = `# My notes

部署密钥保存在 vault 的 ops/deploy-key 路径下，每月轮换。
The staging database password is in 1Password, not in the repo.
`;

function episode(id: string, summary: string): EpisodeRecord {
  return {
    id,
    agent_id: "main",
    created_at: "2026-03-02T10:00:00.000Z",
    started_at: "2026-03-02T09:00:00.000Z",
    turn_range: [3, 5],
    message_count_range: [3, 5],
    work_item_id: null,
    workspace_id: null,
    files: ["deploy.sh"],
    commands: ["./deploy.sh staging"],
    verification: [],
    decisions: ["The deploy works again."],
    carry_forward: [],
    waiting: null,
    boundary: "result_checkpoint",
    summary,
  };
}

async function seed(host: RuntimeHost) {
  const home = (await host.agents.get("main")).agent_home;
  mkdirSync(join(home, "memory"), { recursive: true });
  writeFileSync(join(home, "memory", "self.md"), SELF);
  const brief = await createBrief(host.store, {
    agent_id: "main",
    kind: "result",
    text: "Rotated the deploy key and updated the CI secret DEPLOY_KEY.",
  });
  await host.store.tx(
    async () =>
      await host.store.memory.addEpisode(
        episode("ep_fix1", "修复了部署脚本：deploy.sh 使用了过期的 key。Fixed the broken deploy."),
      ),
  );
  return { home, brief };
}

const refs = (r: any) => (r.result.results as { source_ref: string }[]).map((x) => x.source_ref);

describe("MemorySearch", () => {
  it("finds notes, briefs, episodes and work items with English, Chinese and mixed queries", async () => {
    const host = await openHost();
    const { home, brief } = await seed(host);
    const created = await call(host, "CreateWorkItem", {
      objective: "Automate the deploy key rotation (自动轮换部署密钥)",
    });
    expect(created.canonical.status).toBe("success");

    const mixed = await call(host, "MemorySearch", { query: "部署 deploy key" });
    expect(mixed.canonical.status).toBe("success");
    expect(refs(mixed)).toEqual(
      expect.arrayContaining(["mem:file:self", `mem:brief:${brief.id}`, "mem:episode:ep_fix1"]),
    );
    const hit = mixed.result.results.find((r: any) => r.source_ref === "mem:file:self");
    expect(hit).toMatchObject({
      kind: "memory_file",
      scope_kind: "agent",
      workspace_id: null,
      agent_id: "main",
      source_path: join(home, "memory", "self.md"),
      title: "My notes",
    });
    expect(typeof hit.score).toBe("number");
    expect(hit.updated_at).toMatch(/^\d{4}-/);
    expect(mixed.rendered).toContain("mem:file:self");

    const english = await call(host, "MemorySearch", { query: "staging password" });
    expect(refs(english)[0]).toBe("mem:file:self");
    expect(english.result.results[0].snippet).toContain("staging database password");

    const chinese = await call(host, "MemorySearch", { query: "部署密钥" });
    expect(refs(chinese)).toEqual(expect.arrayContaining(["mem:file:self"]));
    expect(refs(chinese).some((r) => r.startsWith("mem:work:"))).toBe(true);
    // no snippet or body carries the bigram expansion
    expect(JSON.stringify(chinese.result)).not.toContain("部署 署密");

    const one = await call(host, "MemorySearch", { query: "钥" });
    expect(refs(one)).toContain("mem:file:self");

    const kinds = await call(host, "MemorySearch", { query: "deploy", kinds: ["episode"] });
    expect(refs(kinds)).toEqual(["mem:episode:ep_fix1"]);

    const none = await call(host, "MemorySearch", { query: "kubernetes" });
    expect(none.result.results).toEqual([]);
    const bad = await call(host, "MemorySearch", { query: "" });
    expect(bad.canonical.status).toBe("error");
    const long = await call(host, "MemorySearch", { query: "x".repeat(501) });
    expect(long.canonical.status).toBe("error");

    // the index is a private file under the agent home
    const p = indexPaths(home);
    expect(statSync(p.index).mode & 0o777).toBe(0o600);
    expect(statSync(p.dir).mode & 0o777).toBe(0o700);
  });

  it("repairs edited memory files by hash, honours the dirty marker and rebuilds a damaged index", async () => {
    const host = await openHost();
    const { home } = await seed(host);
    expect(refs(await call(host, "MemorySearch", { query: "1Password" }))).toEqual([
      "mem:file:self",
    ]);
    // an editor outside Holon changes the note
    writeFileSync(
      join(home, "memory", "self.md"),
      "# My notes\nThe password moved to Bitwarden.\n",
    );
    expect(refs(await call(host, "MemorySearch", { query: "1Password" }))).toEqual([]);
    expect(refs(await call(host, "MemorySearch", { query: "bitwarden" }))).toEqual([
      "mem:file:self",
    ]);
    // operator.md appears as a second agent-scoped source
    writeFileSync(join(home, "memory", "operator.md"), "Operator prefers Bitwarden links.\n");
    expect(refs(await call(host, "MemorySearch", { query: "bitwarden" }))).toHaveLength(2);

    // a memory file that is a link elsewhere is not read
    const outside = join(home, "..", "outside-secret.md");
    writeFileSync(outside, "TOPSECRET-OUTSIDE\n");
    rmSync(join(home, "memory", "operator.md"));
    symlinkSync(outside, join(home, "memory", "operator.md"));
    expect(refs(await call(host, "MemorySearch", { query: "TOPSECRET" }))).toEqual([]);
    rmSync(join(home, "memory", "operator.md"));
    writeFileSync(join(home, "memory", "operator.md"), "Operator prefers Bitwarden links.\n");

    const p = indexPaths(home);
    writeFileSync(p.dirty, "x");
    expect(refs(await call(host, "MemorySearch", { query: "bitwarden" }))).toHaveLength(2);
    expect(() => statSync(p.dirty)).toThrow();

    // retention removed the oldest brief: its document goes with it
    const before = await call(host, "MemorySearch", { query: "rotated deploy key" });
    const briefRef = refs(before).find((r) => r.startsWith("mem:brief:"))!;
    expect(briefRef).toBeTruthy();
    host.store.db
      .prepare("DELETE FROM briefs WHERE id = ?")
      .run(briefRef.slice("mem:brief:".length));
    const after = await call(host, "MemorySearch", { query: "rotated deploy key" });
    expect(refs(after)).not.toContain(briefRef);
    expect((await call(host, "MemoryGet", { source_ref: briefRef })).error?.kind).toBe(
      "memory_source_not_found",
    );

    writeFileSync(p.index, "this is not a database");
    const again = await call(host, "MemorySearch", { query: "deploy" });
    expect(again.canonical.status).toBe("success");
    expect(refs(again)).toContain("mem:episode:ep_fix1");
  });

  it("keeps other workspaces' memory out unless asked; agent memory is always in", async () => {
    const host = await openHost();
    await seed(host);
    await host.store.tx(
      async () =>
        await host.store.briefs.insert({
          id: "brief_other",
          agent_id: "main",
          kind: "result",
          created_at: "2026-03-03T00:00:00.000Z",
          text: "In the billing repo the deploy key is different.",
          workspace_id: "ws_billing",
        }),
    );
    const scoped = await call(host, "MemorySearch", { query: "deploy key" });
    expect(refs(scoped)).not.toContain("mem:brief:brief_other");
    expect(refs(scoped)).toContain("mem:file:self");
    const all = await call(host, "MemorySearch", {
      query: "deploy key",
      include_all_workspaces: true,
    });
    const other = all.result.results.find((r: any) => r.source_ref === "mem:brief:brief_other");
    expect(other).toMatchObject({ scope_kind: "workspace", workspace_id: "ws_billing" });
  });
});

describe("MemoryGet", () => {
  it("returns exact bodies within its bounds and refuses bad handles", async () => {
    const host = await openHost();
    const { home } = await seed(host);
    const got = await call(host, "MemoryGet", { source_ref: "mem:file:self" });
    expect(got.canonical.status).toBe("success");
    expect(got.result.content).toBe(SELF);
    expect(got.result.truncated).toBe(false);
    expect(got.result).toMatchObject({
      kind: "memory_file",
      scope_kind: "agent",
      agent_id: "main",
    });
    expect(got.rendered).toContain("部署密钥保存在 vault");

    const big = "段落".repeat(15_000) + "end";
    writeFileSync(join(home, "memory", "operator.md"), big);
    const dflt = await call(host, "MemoryGet", { source_ref: "mem:file:operator" });
    expect(dflt.result.content).toHaveLength(12_000);
    expect(dflt.result.truncated).toBe(true);
    expect(dflt.result.total_chars).toBe(30_003);
    const small = await call(host, "MemoryGet", { source_ref: "mem:file:operator", max_chars: 1 });
    expect(small.result.content).toBe("段");
    const max = await call(host, "MemoryGet", {
      source_ref: "mem:file:operator",
      max_chars: 50_000,
    });
    expect(max.result.content).toBe(big);
    expect(max.result.truncated).toBe(false);

    for (const max_chars of [0, 50_001, 1.5, -3]) {
      const r = await call(host, "MemoryGet", { source_ref: "mem:file:self", max_chars });
      expect(r.canonical.status, String(max_chars)).toBe("error");
    }
    const path = await call(host, "MemoryGet", { source_ref: "../../etc/passwd" });
    expect(path.error?.kind).toBe("invalid_source_ref");
    const file = await call(host, "MemoryGet", { source_ref: join(home, "memory", "self.md") });
    expect(file.error?.kind).toBe("invalid_source_ref");
    const missing = await call(host, "MemoryGet", { source_ref: "mem:brief:brief_nope" });
    expect(missing.error?.kind).toBe("memory_source_not_found");
    const empty = await call(host, "MemoryGet", { source_ref: "" });
    expect(empty.canonical.status).toBe("error");
    // nothing was corrupted by the bad calls
    expect((await call(host, "MemoryGet", { source_ref: "mem:file:self" })).result.content).toBe(
      SELF,
    );
    expect(readFileSync(join(home, "memory", "self.md"), "utf8")).toBe(SELF);
  });

  it("expands CJK runs into bigrams and keeps Latin words", () => {
    expect(expandTerms("部署 deploy密钥", true)).toEqual(["部署", "deploy", "密钥"]);
    expect(expandTerms("部署密钥", true)).toEqual(["部署", "署密", "密钥"]);
    expect(expandTerms("钥", true)).toEqual(["钥"]);
    expect(expandTerms("部署", false)).toEqual(["部", "署", "部署"]);
  });
});
