// The canonical tool result envelope and the shared error shape. Tools produce complete
// typed outputs; this module turns them into the stored canonical record, and each
// family's renderer decides what the model sees.
import { createHash } from "node:crypto";
import { HolonError } from "../domain/errors.ts";
export type ToolError = {
  kind: string;
  message: string;
  details?: Record<string, unknown>;
  recovery_hint?: string;
  retryable: boolean;
};

export type CanonicalToolResult = {
  tool_name: string;
  status: "success" | "error";
  summary_text: string;
  result: Record<string, unknown> | null;
  error: ToolError | null;
};

/** A tool's own failure: thrown from `execute`, turned into the error envelope. */
export class ToolFailure extends Error {
  readonly error: ToolError;
  constructor(
    kind: string,
    message: string,
    opts: { details?: Record<string, unknown>; recovery_hint?: string; retryable?: boolean } = {},
  ) {
    super(message);
    this.error = { kind, message, retryable: opts.retryable ?? false };
    if (opts.details) this.error.details = opts.details;
    if (opts.recovery_hint) this.error.recovery_hint = opts.recovery_hint;
  }
}

/**
 * The tool error an exception stands for: a ToolFailure as it is, a HolonError (a service
 * refusing with a stable kind) with its hint as the recovery hint. Undefined for anything
 * else, which is an internal error.
 */
export function toolErrorOf(err: unknown): ToolError | undefined {
  if (err instanceof ToolFailure) return err.error;
  if (err instanceof HolonError) {
    const e: ToolError = { kind: err.kind, message: err.message, retryable: false };
    if (err.details) e.details = err.details;
    if (err.hint) e.recovery_hint = err.hint;
    return e;
  }
  return undefined;
}

export function successResult(
  toolName: string,
  summary: string,
  result: Record<string, unknown>,
): CanonicalToolResult {
  return { tool_name: toolName, status: "success", summary_text: summary, result, error: null };
}

export function errorResult(toolName: string, error: ToolError): CanonicalToolResult {
  return { tool_name: toolName, status: "error", summary_text: error.message, result: null, error };
}

const MAX_DETAIL_CHARS = 2_000;

/** The shared model-visible error receipt: bounded JSON. */
export function renderError(canonical: CanonicalToolResult): string {
  const e = canonical.error!;
  const receipt: Record<string, unknown> = {
    ok: false,
    tool_name: canonical.tool_name,
    kind: e.kind,
    message: e.message,
  };
  if (e.recovery_hint) receipt.hint = e.recovery_hint;
  const field = e.details?.field;
  if (typeof field === "string") receipt.field = field;
  receipt.retryable = e.retryable;
  if (e.details) {
    const text = JSON.stringify(e.details);
    receipt.details =
      text.length <= MAX_DETAIL_CHARS
        ? e.details
        : {
            preview: text.slice(0, MAX_DETAIL_CHARS),
            sha256: createHash("sha256").update(text).digest("hex"),
            original_chars: text.length,
          };
  }
  return JSON.stringify(receipt, null, 2);
}
