// Errors that cross a boundary carry a stable `kind`, a message and a hint.
// HTTP maps them to a status code; the CLI prints message and hint. A service shared by
// tools and operator routes may give two hints: `hint` names what the model can do (a tool
// call) and reaches tool errors; `operatorHint` names what the operator can do (a `holon`
// command) and reaches HTTP bodies and so the CLI. Each edge picks its own.

export type ErrorBody = { kind: string; message: string; hint?: string };

export class HolonError extends Error {
  readonly kind: string;
  readonly status: number;
  readonly hint: string | undefined;
  readonly operatorHint: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    kind: string,
    message: string,
    opts: {
      status?: number;
      hint?: string;
      operatorHint?: string;
      details?: Record<string, unknown>;
    } = {},
  ) {
    super(message);
    this.kind = kind;
    this.status = opts.status ?? 400;
    this.hint = opts.hint;
    this.operatorHint = opts.operatorHint;
    this.details = opts.details;
  }

  /** The body an operator surface (HTTP, and through it the CLI) shows: the operator's hint. */
  toBody(): ErrorBody & Record<string, unknown> {
    const body: ErrorBody & Record<string, unknown> = { kind: this.kind, message: this.message };
    const hint = this.operatorHint ?? this.hint;
    if (hint) body.hint = hint;
    if (this.details) Object.assign(body, this.details);
    return body;
  }
}

export function unknownAgent(agentId: string): HolonError {
  return new HolonError("unknown_agent", `no agent named '${agentId}'`, {
    status: 404,
    hint: `create it first: holon agent create ${agentId} (or POST /control/agents/${agentId}/create)`,
  });
}

export function agentStopped(agentId: string): HolonError {
  return new HolonError(
    "agent_stopped",
    `agent '${agentId}' is stopped and does not accept new input`,
    {
      status: 409,
      hint: `resume it first: holon agent start ${agentId} (or POST /control/agents/${agentId}/control {"action":"resume"})`,
      details: { resume_required: true },
    },
  );
}

/**
 * The default of an exhaustive switch: the compiler proves it unreachable, so adding an
 * event or entry kind points at every switch that must handle it. At runtime (a value from
 * another version slipped through) it throws rather than continuing silently.
 */
export function assertNever(x: never, what = "value"): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(x)}`);
}
