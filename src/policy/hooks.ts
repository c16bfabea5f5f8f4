// Hooks in the shape Claude Code users already write: per event a list of
// `{matcher, hooks: [{type: "command", command, timeout}]}`. A hook is a shell command that
// gets one JSON object on stdin and answers with its exit code and, optionally, JSON on
// stdout. Exit 2 blocks, with stderr as the reason; other failures (a non-zero exit, a
// timeout, more than 1 MiB of output, unreadable JSON) are reported to the caller, which
// fails closed for PreToolUse and open for every other event.
//
// A hook runs as `/bin/sh -c command` in its own process group, with the scrubbed command
// environment, and is killed (the whole group) when it overruns its time or output. A
// workspace hook runs confined, as the agent's commands do (`wrap`, from the sandbox).
import { spawn } from "node:child_process";
import type { HookCommand, HookEvent, HookMatcher, HookSettings } from "../domain/policy.ts";
import { HolonError } from "../domain/errors.ts";

export const DEFAULT_HOOK_TIMEOUT_MS = 60_000;
export const MAX_HOOK_OUTPUT_BYTES = 1024 * 1024;
/** Tool events match on the tool name; these aliases let Claude Code matchers work. */
const TOOL_ALIASES: Record<string, string[]> = {
  ExecCommand: ["Bash"],
  ExecCommandBatch: ["Bash"],
};
export const TOOL_EVENTS: ReadonlySet<HookEvent> = new Set(["PreToolUse", "PostToolUse"]);
/** Events whose matcher applies: tool events (the tool name), PreCompact (`auto`/`manual`). */
const MATCHED_EVENTS: ReadonlySet<HookEvent> = new Set(["PreToolUse", "PostToolUse", "PreCompact"]);

/** Check matchers compile (a matcher is a regular expression over the tool name). */
export function validateHookSettings(settings: HookSettings): void {
  for (const [event, matchers] of Object.entries(settings)) {
    for (const m of matchers ?? []) {
      try {
        matcherRegex(m.matcher);
      } catch (err) {
        throw new HolonError(
          "invalid_hook_settings",
          `hooks.${event}: matcher ${JSON.stringify(m.matcher)} is not a valid pattern: ${(err as Error).message}`,
          { hint: 'a matcher is a tool name, names joined with "|", or a regular expression' },
        );
      }
    }
  }
}

const regexCache = new Map<string, RegExp | null>();

function matcherRegex(matcher: string | undefined): RegExp | null {
  if (matcher === undefined || matcher === "" || matcher === "*") return null;
  let re = regexCache.get(matcher);
  if (re === undefined) {
    re = new RegExp(`^(?:${matcher})$`);
    if (regexCache.size > 1_000) regexCache.clear();
    regexCache.set(matcher, re);
  }
  return re;
}

/** The hook commands of `event` whose matcher accepts `toolName` (tool events only). */
export function matchingHooks(
  layers: (HookSettings | undefined)[],
  event: HookEvent,
  toolName?: string,
): HookCommand[] {
  const out: HookCommand[] = [];
  for (const layer of layers) {
    for (const m of (layer?.[event] ?? []) as HookMatcher[]) {
      if (MATCHED_EVENTS.has(event) && toolName !== undefined) {
        const re = matcherRegex(m.matcher);
        const names = [toolName, ...(TOOL_ALIASES[toolName] ?? [])];
        if (re && !names.some((n) => re.test(n))) continue;
      }
      out.push(...m.hooks);
    }
  }
  return out;
}

export type HookOutcome =
  | {
      kind: "ok";
      /** Parsed JSON stdout, or null when stdout was empty or plain text. */
      json: Record<string, unknown> | null;
      /** Plain (non-JSON) stdout, bounded. */
      text: string;
    }
  | { kind: "blocked"; reason: string }
  | {
      kind: "failed";
      reason: "timeout" | "output_too_large" | "exit_code" | "spawn_failed" | "invalid_output";
      detail: string;
      exit_code: number | null;
    };

export type HookRunOptions = {
  cwd: string;
  env: Record<string, string>;
  signal?: AbortSignal;
  /** Wraps the hook's argv to run it confined (a workspace hook under the sandbox). */
  wrap?: ((inner: string[]) => string[]) | undefined;
};

/** Run one hook command with `input` on stdin. Never throws. */
export function runHook(
  hook: HookCommand,
  input: Record<string, unknown>,
  opts: HookRunOptions,
): Promise<HookOutcome> {
  const timeoutMs = hook.timeout !== undefined ? hook.timeout * 1000 : DEFAULT_HOOK_TIMEOUT_MS;
  return new Promise((resolve) => {
    let settled = false;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let overrun: "timeout" | "output_too_large" | null = null;
    let child: ReturnType<typeof spawn>;
    try {
      const argv = opts.wrap
        ? opts.wrap(["/bin/sh", "-c", hook.command])
        : ["/bin/sh", "-c", hook.command];
      child = spawn(argv[0]!, argv.slice(1), {
        cwd: opts.cwd,
        env: opts.env,
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
      });
    } catch (e) {
      resolve({ kind: "failed", reason: "spawn_failed", detail: String(e), exit_code: null });
      return;
    }
    const kill = () => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(() => {
      overrun ??= "timeout";
      kill();
    }, timeoutMs);
    const onAbort = () => {
      overrun ??= "timeout";
      kill();
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const collect = (chunks: Buffer[], which: "out" | "err") => (b: Buffer) => {
      const total = which === "out" ? (outBytes += b.length) : (errBytes += b.length);
      if (total > MAX_HOOK_OUTPUT_BYTES) {
        overrun ??= "output_too_large";
        kill();
        return;
      }
      chunks.push(b);
    };
    child.stdout!.on("data", collect(out, "out"));
    child.stderr!.on("data", collect(err, "err"));
    child.stdin!.on("error", () => {}); // a hook that ignores stdin may close it early
    child.stdin!.end(JSON.stringify(input));
    const finish = (o: HookOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      resolve(o);
    };
    child.on("error", (e) =>
      finish({ kind: "failed", reason: "spawn_failed", detail: e.message, exit_code: null }),
    );
    child.on("close", (code) => {
      const stderr = Buffer.concat(err).toString("utf8");
      if (overrun === "timeout") {
        return finish({
          kind: "failed",
          reason: "timeout",
          detail: `the hook did not finish within ${timeoutMs / 1000} s`,
          exit_code: code,
        });
      }
      if (overrun === "output_too_large") {
        return finish({
          kind: "failed",
          reason: "output_too_large",
          detail: `the hook printed more than ${MAX_HOOK_OUTPUT_BYTES} bytes`,
          exit_code: code,
        });
      }
      if (code === 2) {
        return finish({ kind: "blocked", reason: clip(stderr.trim() || "blocked by a hook") });
      }
      if (code !== 0) {
        return finish({
          kind: "failed",
          reason: "exit_code",
          detail: clip(stderr.trim() || `exit code ${code}`),
          exit_code: code,
        });
      }
      const stdout = Buffer.concat(out).toString("utf8").trim();
      if (stdout.startsWith("{")) {
        try {
          const json = JSON.parse(stdout) as unknown;
          if (json && typeof json === "object" && !Array.isArray(json)) {
            return finish({ kind: "ok", json: json as Record<string, unknown>, text: "" });
          }
        } catch {
          // fall through
        }
        return finish({
          kind: "failed",
          reason: "invalid_output",
          detail: "stdout starts with { but is not a JSON object",
          exit_code: 0,
        });
      }
      finish({ kind: "ok", json: null, text: clip(stdout) });
    });
  });
}

const MAX_REASON_CHARS = 4_000;

export function clip(s: string, n = MAX_REASON_CHARS): string {
  return s.length > n ? s.slice(0, n) + "…" : s;
}

/** What a hook's JSON says, in the fields Claude Code defines. */
export type HookVerdict = {
  /** deny / ask / allow from permissionDecision, or block/approve from `decision`. */
  decision: "allow" | "deny" | "ask" | "block" | null;
  reason: string | null;
  updatedInput: Record<string, unknown> | null;
  additionalContext: string | null;
};

export function readVerdict(json: Record<string, unknown> | null): HookVerdict {
  const v: HookVerdict = {
    decision: null,
    reason: null,
    updatedInput: null,
    additionalContext: null,
  };
  if (!json) return v;
  const hso = (json.hookSpecificOutput ?? null) as Record<string, unknown> | null;
  const str = (x: unknown) => (typeof x === "string" ? clip(x) : null);
  if (typeof json.decision === "string") {
    if (json.decision === "block") v.decision = "block";
    else if (json.decision === "approve") v.decision = "allow";
  }
  v.reason = str(json.reason) ?? str(json.stopReason);
  if (json.continue === false) {
    v.decision = "block";
    v.reason ??= str(json.stopReason);
  }
  if (hso && typeof hso === "object") {
    const pd = hso.permissionDecision;
    if (pd === "allow" || pd === "deny" || pd === "ask") v.decision = pd;
    v.reason = str(hso.permissionDecisionReason) ?? v.reason;
    if (
      hso.updatedInput &&
      typeof hso.updatedInput === "object" &&
      !Array.isArray(hso.updatedInput)
    )
      v.updatedInput = hso.updatedInput as Record<string, unknown>;
    v.additionalContext = str(hso.additionalContext);
  }
  return v;
}
