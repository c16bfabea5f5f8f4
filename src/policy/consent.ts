// Consent to workspace-level definitions: a hook in a workspace's `.holon.json` (and an MCP
// server in its `.mcp.json`) runs only after an operator approved exactly it. An approval is
// bound to the workspace, the entry's name and the SHA-256 of the entry's full definition
// (canonical JSON: every field, so a changed command, argument, env name, cwd, url or header
// changes it); any change, including one the agent makes, needs a new approval. Grants are
// durable (store/approvals.ts), so a restart keeps them.
//
// The API (one call per use, cheap when already decided):
//   consentDigest(definition)      → SHA-256 hex over canonical JSON
//   registry.check(agentId, b)     → { state: granted | pending | refused, ask_id, digest }
//       granted: run it; pending: an approval ask waits (opened now if none stands), do not
//       run it; refused: the operator said no to this exact definition, do not run it.
// An ask opened here is of kind `approval` (details.approval "consent", details.subject the
// binding's subject) and holds nothing up: the agent keeps working without the entry.
//
// This is the one store of these decisions: the MCP client (src/mcp/, a layer below) reaches
// it through the interface it declares (WorkspaceConsent there), which this class satisfies;
// its bindings bring their own digest (MCP's tool listings are bound to the same SHA-256)
// and their own wording of the ask (the full command line or URL and every reference).
import type { AskRecord } from "../domain/ask.ts";
import type { ConsentGrant, ConsentSubject } from "../domain/approval.ts";
import type { AskDecision, AskEffects, AskService } from "../asks/service.ts";
import type { Store } from "../store/db.ts";
import { digestOf } from "./approval.ts";

export type ConsentBinding = {
  subject: ConsentSubject;
  /** The workspace root (its real path). */
  workspace: string;
  /** The entry's name within the workspace file (`PreToolUse[0]`, an MCP server's name). */
  name: string;
  /** The entry's full definition, as parsed from the file (as shown, when `digest` is given). */
  definition: unknown;
  /** The SHA-256 the subject computed itself over the full definition (else computed here). */
  digest?: string | undefined;
  /** How the subject words its ask (replaces the generic about and detail; adds details). */
  present?: { about: string; detail: string; details: Record<string, unknown> } | undefined;
};

export type ConsentCheck = {
  state: ConsentGrant["state"];
  ask_id: string | null;
  digest: string;
};

const SUBJECT_LABEL: Record<ConsentSubject, string> = {
  workspace_hook: "workspace hook",
  mcp_server: "workspace MCP server",
};

/** SHA-256 of a definition (canonical JSON, keys sorted). */
export function consentDigest(definition: unknown): string {
  return digestOf(definition);
}

export class ConsentRegistry implements AskEffects {
  private readonly store: Store;
  private readonly asks: AskService;
  /** Bumped by every decision: callers that cache what they derived from grants recheck. */
  version = 0;

  constructor(deps: { store: Store; asks: AskService }) {
    this.store = deps.store;
    this.asks = deps.asks;
  }

  /** Whether this exact binding may run, without asking (status surfaces). */
  async peek(b: ConsentBinding): Promise<ConsentCheck> {
    const digest = b.digest ?? consentDigest(b.definition);
    const grant = await this.store.approvals.getGrant(b.subject, b.workspace, b.name, digest);
    return { state: grant?.state ?? "pending", ask_id: grant?.ask_id ?? null, digest };
  }

  /** Whether this exact binding may run; opens its approval ask when none stands. */
  async check(agentId: string, b: ConsentBinding): Promise<ConsentCheck> {
    const digest = b.digest ?? consentDigest(b.definition);
    const grant = await this.store.approvals.getGrant(b.subject, b.workspace, b.name, digest);
    if (grant && grant.state !== "pending") {
      return { state: grant.state, ask_id: grant.ask_id, digest };
    }
    if (grant && (await this.store.asks.get(grant.ask_id))?.state === "pending") {
      return { state: "pending", ask_id: grant.ask_id, digest };
    }
    // Never asked, or its ask expired or was withdrawn undecided: ask (again).
    const label = SUBJECT_LABEL[b.subject];
    const shown = JSON.stringify(b.definition, null, 2);
    const now = this.store.clock.now().toISOString();
    const ask = await this.store.tx(async () => {
      const opened = await this.asks.open({
        agent_id: agentId,
        kind: "approval",
        source: "approval",
        scope: "agent",
        gates_agent: false,
        about: b.present?.about ?? `Allow ${label} ${b.name} of ${b.workspace}`,
        detail:
          b.present?.detail ??
          [
            `The ${label} ${b.name} in ${b.workspace} asks to run. It runs only once you approve this exact definition (sha256 ${digest}); any change to it asks again.`,
            "",
            shown.length > 6_000 ? shown.slice(0, 6_000) + "…" : shown,
          ].join("\n"),
        options: ["approve", "deny"],
        details: {
          ...b.present?.details,
          approval: "consent",
          subject: b.subject,
          workspace: b.workspace,
          name: b.name,
          digest,
          definition: b.definition,
        },
      });
      await this.store.approvals.putGrant({
        subject: b.subject,
        workspace: b.workspace,
        name: b.name,
        digest,
        state: "pending",
        ask_id: opened.id,
        definition: b.definition,
        created_at: now,
        updated_at: now,
      });
      return opened;
    });
    return { state: "pending", ask_id: ask.id, digest };
  }

  /** The grants of one subject in one state (in no particular order), at most `limit`. */
  grants(
    subject: ConsentSubject,
    state: ConsentGrant["state"],
    limit = 1_000,
  ): Promise<ConsentGrant[]> {
    return this.store.approvals.grantsIn(subject, state, limit);
  }

  /**
   * Take in a decision made before this store existed (an MCP approvals file): kept unless
   * the same binding already has a decision here. True when it was taken.
   */
  adopt(g: {
    subject: ConsentSubject;
    workspace: string;
    name: string;
    digest: string;
    state: "granted" | "refused";
    ask_id: string;
    definition: unknown;
    decided_at: string;
  }): Promise<boolean> {
    return this.store.tx(async () => {
      const had = await this.store.approvals.getGrant(g.subject, g.workspace, g.name, g.digest);
      if (had && had.state !== "pending") return false;
      await this.store.approvals.putGrant({
        subject: g.subject,
        workspace: g.workspace,
        name: g.name,
        digest: g.digest,
        state: g.state,
        ask_id: g.ask_id,
        definition: g.definition,
        created_at: g.decided_at,
        updated_at: g.decided_at,
      });
      this.version++;
      return true;
    });
  }

  async decided(ask: AskRecord, decision: AskDecision): Promise<undefined> {
    if (!isConsentAsk(ask)) return undefined;
    this.version++;
    const state = decision.decision.toLowerCase() === "approve" ? "granted" : "refused";
    for (const g of await this.store.approvals.grantsOfAsk(ask.id)) {
      const next: ConsentGrant = {
        ...g,
        state,
        updated_at: this.store.clock.now().toISOString(),
      };
      if (ask.reason) next.reason = ask.reason;
      await this.store.approvals.putGrant(next);
    }
    return undefined;
  }

  /** Expired or withdrawn undecided: the next use asks again. */
  closed(ask: AskRecord): void {
    if (isConsentAsk(ask)) this.version++;
  }

  /** A consent decision changes what runs; the agent is not woken for it. */
  message(ask: AskRecord): null | undefined {
    return isConsentAsk(ask) ? null : undefined;
  }
}

function isConsentAsk(ask: AskRecord): boolean {
  return ask.kind === "approval" && ask.details?.approval === "consent";
}
