// ApplyPatch: the file-mutation tool. The unified-diff engine does the work; this wraps
// it in the tool envelope and a short textual receipt.
import { z } from "zod";
import { ToolFailure } from "../envelope.ts";
import { describe, type ToolDefinition } from "../registry.ts";
import { applyPatch, patchJournalDir } from "./apply-patch-engine.ts";

const Input = z.strictObject({
  patch: z.string().min(1).describe("The unified diff to apply, for one or more files."),
});

/** Lark grammar for the freeform form of the tool on OpenAI Responses. */
const GRAMMAR = String.raw`start: file_patch+
file_patch: meta_line* (old_header new_header hunk*)?
meta_line: META
old_header: OLD_HEADER
new_header: NEW_HEADER
hunk: HUNK_HEADER body_line+
body_line: BODY | NO_NEWLINE
META: /(diff --git|index|new file mode|deleted file mode|old mode|new mode|similarity index|dissimilarity index|rename from|rename to|copy from|copy to)[^\n]*\n/
OLD_HEADER: /--- [^\n]+\n/
NEW_HEADER: /\+\+\+ [^\n]+\n?/
HUNK_HEADER: /@@ -[0-9]+(,[0-9]+)? \+[0-9]+(,[0-9]+)? @@[^\n]*\n?/
BODY: /[ +\-][^\n]*\n?/
NO_NEWLINE: /\\ No newline at end of file\n?/
`;

export const applyPatchTool: ToolDefinition<typeof Input> = {
  name: "ApplyPatch",
  family: "workspace",
  description: describe(import.meta.url, "./apply-patch.md"),
  input: Input,
  freeform: { syntax: "lark", definition: GRAMMAR, field: "patch" },
  async execute(input, ctx) {
    const outcome = await applyPatch({
      root: ctx.execution_root,
      patch: input.patch,
      cwd: ctx.cwd,
      // All-or-nothing across a crash too: the host rolls this journal forward or back at start.
      journalDir: patchJournalDir(ctx.agent.agent_home),
    });
    if (!outcome.ok) {
      const e = outcome.error;
      const details: Record<string, unknown> = { ...e.details };
      if (e.path !== undefined) details.path = e.path;
      if (e.hunk !== undefined) details.hunk = e.hunk;
      throw new ToolFailure(e.kind, e.message, {
        details,
        recovery_hint: e.recovery_hint,
        retryable: e.retryable,
      });
    }
    return {
      summary_text: outcome.summary_text,
      result: {
        files: outcome.files.map((f) => ({
          path: f.path,
          ...(f.old_path ? { old_path: f.old_path } : {}),
          operation: f.operation,
          hunks_applied: f.hunks_applied,
          lines_added: f.lines_added,
          lines_removed: f.lines_removed,
          max_offset: f.max_offset,
        })),
        diagnostics: outcome.diagnostics,
      },
    };
  },
  render(c) {
    const files = (c.result?.files ?? []) as {
      path: string;
      old_path?: string;
      operation: string;
      lines_added: number;
      lines_removed: number;
      max_offset: number;
    }[];
    const lines = [c.summary_text];
    for (const f of files) {
      const name = f.old_path ? `${f.old_path} -> ${f.path}` : f.path;
      const drift = f.max_offset ? ` (hunks found ${f.max_offset} lines from their headers)` : "";
      lines.push(`${f.operation} ${name} +${f.lines_added} -${f.lines_removed}${drift}`);
    }
    return lines.join("\n");
  },
};
