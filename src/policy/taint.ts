// Taint: the policy authority a turn runs under. It is the lowest `authority_class` among
// what the turn consumes, and it follows what the turn creates: a work item, a child, a
// sleep or a continuation stores it, and the turns they trigger inherit it until an
// operator instruction re-confirms them. A stored value can only lower a turn's authority,
// never raise it, so a forged or stale one can do no harm beyond asking more.
import {
  AuthorityClass,
  type AuthorityClass as Authority,
  type QueuedMessage,
} from "../domain/message.ts";
import type { PermissionMode, ExternalEvidenceMode } from "../domain/policy.ts";
import { stricterMode } from "./rules.ts";

const RANK: Record<Authority, number> = {
  operator_instruction: 3,
  runtime_instruction: 2,
  integration_signal: 1,
  external_evidence: 0,
};

export function lowestAuthority(...all: (Authority | undefined | null)[]): Authority {
  let low: Authority = "operator_instruction";
  for (const a of all) if (a && RANK[a] < RANK[low]) low = a;
  return low;
}

/** A stored authority, if the value is one (metadata is loose JSON). */
export function authorityOf(v: unknown): Authority | undefined {
  const r = AuthorityClass.safeParse(v);
  return r.success ? r.data : undefined;
}

/** Where a message's inherited authority may be stored, looked up by the caller. */
export type TaintSources = {
  /** The work item the message is about, if any: its stored authority. */
  workItem?: Authority | undefined;
  /** The agent's own floor (a child spawned by a tainted turn) and its sleep carry. */
  agentFloor?: Authority | undefined;
  sleepCarry?: Authority | undefined;
};

/** The policy authority of a turn that consumes `message`. */
export function turnAuthority(message: QueuedMessage, sources: TaintSources): Authority {
  const carried = authorityOf(message.metadata?.policy_authority);
  const isSleep = message.origin.kind === "system" && message.origin.subsystem === "sleep";
  // An operator instruction re-confirms a tainted agent: its own turn runs at full authority.
  const operator = message.authority_class === "operator_instruction";
  return lowestAuthority(
    message.authority_class,
    carried,
    sources.workItem,
    operator ? undefined : sources.agentFloor,
    isSleep ? sources.sleepCarry : undefined,
  );
}

/**
 * The mode a turn runs under: the agent's mode, made stricter for external evidence
 * (`ask` unless the host configured otherwise). Integration signals run under the agent's mode.
 */
export function modeFor(
  agentMode: PermissionMode,
  authority: Authority,
  externalEvidence: ExternalEvidenceMode,
): PermissionMode {
  if (authority !== "external_evidence" || externalEvidence === "agent_mode") return agentMode;
  return stricterMode(agentMode, externalEvidence);
}
