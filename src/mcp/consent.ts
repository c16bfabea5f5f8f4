// Consent to a workspace's MCP servers. Anything in a workspace may have been written by the
// agent (or by whoever wrote the repository), so a server a `.mcp.json` defines starts
// nothing until the operator approves it. The approval is an ask of kind `approval` that
// shows the full command line or URL and every secret the definition references; it is
// bound to the workspace, the server's name and the SHA-256 of its whole definition, so any
// change (the agent's edit included) needs a new approval. Only the references an approval
// lists are ever expanded. A denial is remembered for that definition too, so the operator
// is not asked again until it changes.
//
// The ask does not gate the agent (it keeps working without the server). Decisions are kept
// in <holon_home>/mcp/approvals.json (0600), since decided asks are pruned.
import { mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { AskRecord } from "../domain/ask.ts";
import type { AskDecision, AskEffects } from "../asks/service.ts";
import { atomicWriteFile } from "../store/files.ts";

export type Approval = {
  workspace: string;
  server: string;
  sha256: string;
  /** The references (`${VAR}`, `${credential:x}`) the operator saw and allowed. */
  references: string[];
  decision: "approved" | "denied";
  ask_id: string;
  decided_at: string;
};

export type ConsentRequest = {
  workspace: string;
  server: string;
  sha256: string;
  references: string[];
  /** The full command line or URL. */
  shown: string;
};

const MAX_APPROVALS = 1_000;
export const CONSENT_OPTIONS = ["approve", "deny"];

export class ConsentBook {
  readonly #path: string;
  #cache: Approval[] | undefined;

  constructor(path: string) {
    this.#path = path;
  }

  #all(): Approval[] {
    if (this.#cache === undefined) {
      try {
        const v = JSON.parse(readFileSync(this.#path, "utf8")) as { approvals?: Approval[] };
        this.#cache = Array.isArray(v.approvals) ? v.approvals : [];
      } catch {
        this.#cache = [];
      }
    }
    return this.#cache;
  }

  /** The decision bound to exactly this definition, if there is one. */
  find(workspace: string, server: string, sha256: string): Approval | undefined {
    return this.#all().find(
      (a) => a.workspace === workspace && a.server === server && a.sha256 === sha256,
    );
  }

  /** Bumped on every decision: what was derived from the book is stale. */
  version = 0;

  /** The host variables approved workspace definitions may read (withheld from commands). */
  approvedEnvNames(): string[] {
    const out = new Set<string>();
    for (const a of this.#all()) {
      if (a.decision !== "approved") continue;
      for (const r of a.references) {
        const m = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(r);
        if (m) out.add(m[1]!);
      }
    }
    return [...out];
  }

  record(a: Approval): void {
    this.version++;
    const rest = this.#all().filter(
      (x) => !(x.workspace === a.workspace && x.server === a.server && x.sha256 === a.sha256),
    );
    const next = [...rest, a].slice(-MAX_APPROVALS);
    mkdirSync(dirname(this.#path), { recursive: true, mode: 0o700 });
    atomicWriteFile(this.#path, JSON.stringify({ approvals: next }, null, 2) + "\n");
    this.#cache = next;
  }
}

/** What an ask for consent says and keeps (`details.mcp_consent` identifies it). */
export function consentAsk(agentId: string, req: ConsentRequest) {
  const refs = req.references.length ? req.references.join(", ") : "none";
  return {
    agent_id: agentId,
    kind: "approval" as const,
    source: "approval" as const,
    scope: "agent" as const,
    about: `Start MCP server '${req.server}' from ${req.workspace}/.mcp.json?`,
    detail: [
      `The workspace ${req.workspace} defines an MCP server that no operator has approved.`,
      `server:     ${req.server}`,
      `runs:       ${req.shown}`,
      `references: ${refs} (only these are expanded, and only if you approve)`,
      `sha256:     ${req.sha256}`,
      `Approving lets the agent's tools reach this server; any change to its definition asks again.`,
    ].join("\n"),
    options: CONSENT_OPTIONS,
    free_text: false,
    details: { mcp_consent: req },
    gates_agent: false as const,
  };
}

export function consentOf(ask: AskRecord): ConsentRequest | undefined {
  const c = ask.details?.mcp_consent as ConsentRequest | undefined;
  return c && typeof c.sha256 === "string" && typeof c.server === "string" ? c : undefined;
}

/** The asks plane's hook: a decided consent ask becomes an approval (or a denial). */
export function consentEffects(book: ConsentBook, onChange: () => void): AskEffects {
  return {
    decided(ask: AskRecord, decision: AskDecision) {
      const req = consentOf(ask);
      if (!req) return undefined;
      const approved = decision.decision === "approve";
      book.record({
        workspace: req.workspace,
        server: req.server,
        sha256: req.sha256,
        references: req.references,
        decision: approved ? "approved" : "denied",
        ask_id: ask.id,
        decided_at: ask.decided_at ?? new Date().toISOString(),
      });
      onChange();
      return approved
        ? `MCP server '${req.server}' is approved; its tools join your catalog from your next turn.`
        : `MCP server '${req.server}' was denied; it will not be started.`;
    },
  };
}
