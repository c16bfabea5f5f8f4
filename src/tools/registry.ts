// The tool registry: each built-in tool declares its name, zod input schema, model-facing
// description (a .md file beside it), how it runs, and how its result is rendered for
// the model. Dispatch validates input and wraps every outcome in the canonical envelope.
import { readFileSync } from "node:fs";
import type { z } from "zod";
import type { AgentRecord } from "../domain/agent.ts";
import type { AuthorityClass, QueuedMessage } from "../domain/message.ts";
import type { TaskService } from "../tasks/service.ts";
import type { AgentPlane } from "../tasks/children.ts";
import type { SkillService } from "../context/skills.ts";
import type { WorkspaceService } from "../workspace/registry.ts";
import type { WorkService } from "../work/service.ts";
import type { MemoryIndexService } from "../memory/search.ts";
import type { McpService } from "../mcp/service.ts";
import type { OutputBudget } from "./budget.ts";
import {
  errorResult,
  toolErrorOf,
  renderError,
  successResult,
  type CanonicalToolResult,
  type ToolError,
} from "./envelope.ts";

/** What one call sees: never the whole store; a tool reaches state through its services. */
export type ToolContext = {
  agent: AgentRecord;
  run_id: string;
  message: QueuedMessage;
  call_id: string;
  /** Root every file and shell path must stay inside. */
  execution_root: string;
  /** Working directory inside the execution root. */
  cwd: string;
  signal: AbortSignal;
  budget: OutputBudget;
  tasks: TaskService;
  /** The plane services tools may call (work, workspaces, timers…), built in host/services.ts. */
  services: ToolServices;
  /**
   * The turn's policy authority (taint, src/policy/taint.ts): what a call creates (a work
   * item, a child) stores it. Absent outside a turn: the message's own authority class.
   */
  policy_authority?: AuthorityClass;
  /** The action leash (rules, hooks, approvals): consulted around every call. */
  guard?: ToolGuard;
};

/** What the guard lets through: the (possibly hook-rewritten) input, or the call's result. */
export type GuardDecision =
  | { kind: "run"; input: unknown; context: string | null }
  | { kind: "result"; canonical: CanonicalToolResult };

/**
 * The one place a call is checked (src/policy/leash.ts implements it): before a validated
 * call runs, and after it ran (PostToolUse hooks). Tools never check permissions themselves.
 */
export interface ToolGuard {
  before(def: ToolDefinition, input: unknown, ctx: ToolContext): Promise<GuardDecision>;
  after(
    def: ToolDefinition,
    input: unknown,
    canonical: CanonicalToolResult,
    ctx: ToolContext,
  ): Promise<string | null>;
}

/**
 * The services a tool can reach, one field per plane. A plane adds its field here and its
 * instance where host/services.ts builds `toolServices`; the turn passes it through as is.
 */
export interface ToolServices {
  tasks: TaskService;
  workspaces: WorkspaceService;
  skills: SkillService;
  work: WorkService;
  /** The agent plane: SpawnAgent, AgentGet and child-task supervision (tasks/children.ts). */
  agents: AgentPlane;
  memory: MemoryIndexService;
  /** MCP servers (src/mcp/): the catalog bridge in tools/mcp/ calls through it. */
  mcp?: Pick<McpService, "call">;
}

/**
 * What a tool asks of the turn, as data: the turn decides what it means (Sleep ends the
 * turn after this round; the closure and the waiting plane take it from there).
 */
export type ToolRequest = { kind: "sleep"; duration_ms: number | undefined };

export type ToolOutput = {
  summary_text: string;
  result: Record<string, unknown>;
  request?: ToolRequest;
  /** Images for the model beside the rendered text (kept out of the stored envelope). */
  images?: { mime_type: string; data: string }[];
};

export type ToolDefinition<S extends z.ZodType = z.ZodType> = {
  name: string;
  family: "command" | "task" | "workspace" | "agent" | "work" | "memory" | "mcp";
  description: string;
  input: S;
  /**
   * The JSON Schema the model sees, when it is not the zod schema's (an MCP tool publishes
   * its server's schema; `input` then only checks the arguments are an object).
   */
  parameters?: Record<string, unknown>;
  /**
   * A freeform grammar form of the tool (OpenAI Responses custom tool). The raw text the
   * model sends is wrapped as `{ [field]: text }` before validation.
   */
  freeform?: { syntax: "lark"; definition: string; field: string };
  execute(input: z.infer<S>, ctx: ToolContext): Promise<ToolOutput>;
  /** What the model sees for a successful result. Errors use the shared receipt. */
  render(canonical: CanonicalToolResult): string;
};

/** Load a tool's description from the .md file beside its module. */
export function describe(moduleUrl: string, file: string): string {
  return readFileSync(new URL(file, moduleUrl), "utf8").trim();
}

export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();

  register(def: ToolDefinition<any>): this {
    this.tools.set(def.name, def as ToolDefinition);
    return this;
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  list(): ToolDefinition[] {
    return [...this.tools.values()];
  }
}

export type DispatchResult = {
  canonical: CanonicalToolResult;
  rendered: string;
  duration_ms: number;
  request?: ToolRequest;
  /** The result came from outside (an MCP server): the turn's authority drops (taint). */
  external_evidence?: boolean;
  images?: { mime_type: string; data: string }[];
};

/**
 * Run one tool call. `rawInput` is what the provider delivered: a JSON string for
 * function tools, plain text for freeform tools.
 */
export async function dispatch(
  registry: ToolRegistry,
  name: string,
  rawInput: string,
  ctx: ToolContext,
  opts: { freeform?: boolean } = {},
): Promise<DispatchResult> {
  const started = performance.now();
  const finish = (canonical: CanonicalToolResult, def?: ToolDefinition): DispatchResult => ({
    canonical,
    rendered: canonical.status === "error" || !def ? renderError(canonical) : def.render(canonical),
    duration_ms: Math.round((performance.now() - started) * 100) / 100,
  });

  const def = registry.get(name);
  if (!def) {
    return finish(
      errorResult(name, {
        kind: "unknown_tool",
        message: `there is no tool named ${name}`,
        details: { tool_name: name, available: registry.list().map((t) => t.name) },
        recovery_hint: "call one of the tools listed in the tool catalog",
        retryable: false,
      }),
    );
  }

  let parsedInput: unknown;
  if (opts.freeform && def.freeform) {
    parsedInput = { [def.freeform.field]: rawInput };
  } else {
    try {
      parsedInput = rawInput.trim() === "" ? {} : JSON.parse(rawInput);
    } catch (err) {
      return finish(
        errorResult(
          name,
          invalidInput(name, `arguments are not valid JSON: ${(err as Error).message}`),
        ),
        def,
      );
    }
  }
  const validated = def.input.safeParse(parsedInput);
  if (!validated.success) {
    const issue = validated.error.issues[0];
    const field = issue?.path.join(".") || undefined;
    return finish(
      errorResult(
        name,
        invalidInput(
          name,
          issue ? `${field ?? "input"}: ${issue.message}` : "invalid input",
          field,
        ),
      ),
      def,
    );
  }

  let input: unknown = validated.data;
  const context: string[] = [];
  if (ctx.guard) {
    const g = await ctx.guard.before(def, input, ctx);
    if (g.kind === "result") return finish(g.canonical, def);
    input = g.input;
    if (g.context) context.push(g.context);
  }
  const done = await execute(def, input, ctx, finish);
  if (def.family === "mcp") done.external_evidence = true;
  if (ctx.guard) {
    const after = await ctx.guard.after(def, input, done.canonical, ctx);
    if (after) context.push(after);
  }
  // Hook context reaches the model beside the result, never inside the stored envelope.
  if (context.length) done.rendered += context.map((c) => `\n\n[hook context] ${c}`).join("");
  return done;
}

async function execute(
  def: ToolDefinition,
  input: unknown,
  ctx: ToolContext,
  finish: (canonical: CanonicalToolResult, def?: ToolDefinition) => DispatchResult,
): Promise<DispatchResult> {
  const name = def.name;
  try {
    const out = await def.execute(input, ctx);
    const done = finish(successResult(name, out.summary_text, out.result), def);
    if (out.request) done.request = out.request;
    if (out.images?.length) done.images = out.images;
    return done;
  } catch (err) {
    const known = toolErrorOf(err);
    if (known) return finish(errorResult(name, known), def);
    if (ctx.signal.aborted) {
      return finish(
        errorResult(name, {
          kind: "tool_aborted",
          message: `${name} was cancelled because the run was aborted`,
          retryable: false,
        }),
        def,
      );
    }
    return finish(
      errorResult(name, {
        kind: "tool_internal_error",
        message: `${name} failed unexpectedly: ${err instanceof Error ? err.message : String(err)}`,
        retryable: false,
      }),
      def,
    );
  }
}

function invalidInput(toolName: string, parseError: string, field?: string): ToolError {
  const details: Record<string, unknown> = { tool_name: toolName, parse_error: parseError };
  if (field) details.field = field;
  return {
    kind: "invalid_tool_input",
    message: `input for ${toolName} does not match the tool schema`,
    details,
    recovery_hint: `call ${toolName} again with arguments that match its published schema`,
    retryable: false,
  };
}
