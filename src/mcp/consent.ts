// Consent to a workspace's MCP servers. Anything in a workspace may have been written by the
// agent (or by whoever wrote the repository), so a server a `.mcp.json` defines starts
// nothing until the operator approves it. The approval is an ask of kind `approval` that
// shows the full command line or URL and every secret the definition references; it is
// bound to the workspace, the server's name and the SHA-256 of its whole definition, so any
// change (the agent's edit included) needs a new approval. Only the references the approval
// listed (those of that exact definition) are ever expanded. A denial is remembered for that
// definition too, so the operator is not asked again until it changes.
//
// The decisions live in the host's one consent store (table `consent_grants`, beside the
// workspace hooks' consents), reached through WorkspaceConsent: the policy layer's registry
// satisfies it and the host hands it in, since this layer sits below policy. A host that
// kept its MCP approvals in `<holon_home>/mcp/approvals.json` (before that store existed)
// has them taken in once at start; the file is then renamed `approvals.json.migrated`.
import { existsSync, readFileSync, renameSync } from "node:fs";
import type { AskRecord } from "../domain/ask.ts";

/** One workspace server as the consent store sees it. */
export type McpConsentBinding = {
  subject: "mcp_server";
  workspace: string;
  name: string;
  /** The definition as the operator is shown it (literal env and header values hidden). */
  definition: unknown;
  /** SHA-256 of the full definition (config.ts definitionDigest). */
  digest: string;
  present?: { about: string; detail: string; details: Record<string, unknown> };
};

export type ConsentState = "pending" | "granted" | "refused";

/** The host's consent store, as MCP uses it (policy/consent.ts ConsentRegistry). */
export interface WorkspaceConsent {
  /** The decision bound to exactly this definition, without asking. */
  peek(b: McpConsentBinding): Promise<{ state: ConsentState; ask_id: string | null }>;
  /** The same, opening the approval ask when none stands. */
  check(
    agentId: string,
    b: McpConsentBinding,
  ): Promise<{ state: ConsentState; ask_id: string | null }>;
  /** Decided grants of a subject (the approved ones' references are withheld from commands). */
  grants(
    subject: "mcp_server",
    state: "granted",
    limit?: number,
  ): Promise<{ definition: unknown }[]>;
  /** Take in an old decision (approvals.json), unless the binding has one. */
  adopt(g: {
    subject: "mcp_server";
    workspace: string;
    name: string;
    digest: string;
    state: "granted" | "refused";
    ask_id: string;
    definition: unknown;
    decided_at: string;
  }): Promise<boolean>;
  /** Bumped by every decision: what was derived from the store is stale. */
  readonly version: number;
}

export type ConsentRequest = {
  workspace: string;
  server: string;
  sha256: string;
  references: string[];
  /** The full command line or URL. */
  shown: string;
};

/** How an MCP consent ask reads (`details.mcp_consent` identifies it). */
export function consentPresentation(req: ConsentRequest) {
  const refs = req.references.length ? req.references.join(", ") : "none";
  return {
    about: `Start MCP server '${req.server}' from ${req.workspace}/.mcp.json?`,
    detail: [
      `The workspace ${req.workspace} defines an MCP server that no operator has approved.`,
      `server:     ${req.server}`,
      `runs:       ${req.shown}`,
      `references: ${refs} (only these are expanded, and only if you approve)`,
      `sha256:     ${req.sha256}`,
      `Approving lets the agent's tools reach this server; any change to its definition asks again.`,
    ].join("\n"),
    details: { mcp_consent: req },
  };
}

export function consentOf(ask: AskRecord): ConsentRequest | undefined {
  const c = ask.details?.mcp_consent as ConsentRequest | undefined;
  return c && typeof c.sha256 === "string" && typeof c.server === "string" ? c : undefined;
}

/** A decision as approvals.json kept it. */
type OldApproval = {
  workspace: string;
  server: string;
  sha256: string;
  references: string[];
  decision: "approved" | "denied";
  ask_id: string;
  decided_at: string;
};

const MAX_OLD_FILE_BYTES = 4 * 1024 * 1024;
const MAX_OLD_APPROVALS = 1_000;

/**
 * Take the decisions of an old `mcp/approvals.json` into the consent store, once: the file is
 * renamed `approvals.json.migrated` afterwards (kept for the operator to look at). A file that
 * cannot be read as approvals is renamed too, with nothing taken in: nothing it says is
 * trusted. Returns how many decisions were taken in.
 */
export async function migrateApprovalsFile(
  path: string,
  consent: WorkspaceConsent,
): Promise<number> {
  if (!existsSync(path)) return 0;
  let entries: unknown[] = [];
  try {
    const text = readFileSync(path, "utf8");
    if (text.length <= MAX_OLD_FILE_BYTES) {
      const v = JSON.parse(text) as { approvals?: unknown };
      if (Array.isArray(v.approvals)) entries = v.approvals.slice(-MAX_OLD_APPROVALS);
    }
  } catch {
    entries = [];
  }
  let taken = 0;
  for (const raw of entries) {
    const a = raw as Partial<OldApproval>;
    if (
      typeof a.workspace !== "string" ||
      typeof a.server !== "string" ||
      typeof a.sha256 !== "string" ||
      !/^[0-9a-f]{64}$/.test(a.sha256) ||
      (a.decision !== "approved" && a.decision !== "denied")
    )
      continue;
    const refs = Array.isArray(a.references)
      ? a.references.filter((r): r is string => typeof r === "string").slice(0, 256)
      : [];
    const took = await consent.adopt({
      subject: "mcp_server",
      workspace: a.workspace,
      name: a.server,
      digest: a.sha256,
      state: a.decision === "approved" ? "granted" : "refused",
      ask_id: typeof a.ask_id === "string" ? a.ask_id : "migrated",
      // The old file kept the references, not the definition (the digest binds it).
      definition: { migrated_from: "mcp/approvals.json", references: refs },
      decided_at: typeof a.decided_at === "string" ? a.decided_at : new Date(0).toISOString(),
    });
    if (took) taken++;
  }
  renameSync(path, `${path}.migrated`);
  return taken;
}
