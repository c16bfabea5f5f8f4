// `holon config …`: runtime configuration, provider definitions, credential profiles and
// the model catalog. Command definitions are cheap; each action loads the configuration
// modules (and zod) only when it runs, so `holon --help` stays fast.
//
// Changes are written straight to the files under HOLON_HOME ("offline_store"); a running
// host re-reads them before its next turn.
import type { Command } from "commander";
import { CliError, action, printJson } from "./output.ts";

type HomeOpts = { home?: string; json?: boolean };

const homeFlag = [
  "--home <path>",
  "Holon state directory (default: $HOLON_HOME or ~/.holon)",
] as const;
const jsonFlag = ["--json", "print machine-readable JSON"] as const;

async function homeOf(opts: HomeOpts): Promise<string> {
  const { resolveHome } = await import("../host/paths.ts");
  return resolveHome(opts.home);
}

/** Errors from the config modules carry a hint; show them as clean CLI errors. */
async function run(fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if (err instanceof CliError) throw err;
    const hint = (err as { hint?: unknown } | null)?.hint;
    if (err instanceof Error && (typeof hint === "string" || hint === undefined) && "hint" in err) {
      throw new CliError(err.message, hint);
    }
    throw err;
  }
}

function show(value: unknown): string {
  if (value === null || value === undefined) return "(not set)";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function table(rows: string[][]): string {
  if (rows.length === 0) return "";
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return (
    rows
      .map((r) =>
        r
          .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

function warn(lines: string[]): void {
  for (const l of lines) process.stderr.write(`warning: ${l}\n`);
}

/** Load config.json for reading commands; a malformed file is an error, not a silent default. */
async function loadStrict(home: string) {
  const { loadConfig } = await import("../host/config.ts");
  const loaded = loadConfig(home);
  if (loaded.error) throw new CliError(loaded.error.message, loaded.error.hint);
  warn(loaded.warnings);
  return loaded;
}

async function resolutionInputs(home: string) {
  const { ConfigSource } = await import("../host/config.ts");
  const source = new ConfigSource({ home });
  const loaded = source.current();
  if (loaded.error) throw new CliError(loaded.error.message, loaded.error.hint);
  warn(loaded.warnings);
  return { source, loaded, inputs: source.inputs() };
}

// ---------------------------------------------------------------------------------------
// Reading the secret for `credentials set`.

async function readAll(stream: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString("utf8");
}

/** From a pipe: everything until EOF. From a terminal: one line, typed without echo. */
async function readSecret(): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) return readAll(stdin);
  process.stderr.write("Paste the credential and press Enter (input is hidden): ");
  return new Promise<string>((resolvePromise, reject) => {
    let buf = "";
    stdin.setRawMode(true);
    stdin.resume();
    const done = (err: Error | null) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (err) reject(err);
      else resolvePromise(buf);
    };
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") return done(null);
        if (ch === "\u0003") return done(new CliError("cancelled"));
        if (ch === "\u007f" || ch === "\b") buf = buf.slice(0, -1);
        else buf += ch;
      }
    };
    stdin.on("data", onData);
  });
}

// ---------------------------------------------------------------------------------------
// Actions.

async function cmdGet(key: string, opts: HomeOpts) {
  const home = await homeOf(opts);
  const loaded = await loadStrict(home);
  const { getConfigValue } = await import("../host/config.ts");
  const v = getConfigValue(loaded, key);
  if (opts.json) printJson(v);
  else process.stdout.write(show(v.value) + (v.env ? `  (from ${v.env})` : "") + "\n");
}

/** `config set <key> <value> [<key> <value> …]`: every pair is checked, then all are stored at once. */
async function cmdSet(key: string, value: string, more: string[], opts: HomeOpts) {
  if (more.length % 2 !== 0) {
    throw new CliError(
      `"${more.at(-1)}" has no value`,
      "give keys and values in pairs: holon config set <key> <value> [<key> <value> ...]",
    );
  }
  const pairs: [string, string][] = [[key, value]];
  for (let i = 0; i < more.length; i += 2) pairs.push([more[i]!, more[i + 1]!]);
  const home = await homeOf(opts);
  const { setConfigValues } = await import("../host/config.ts");
  const results = setConfigValues(home, pairs);
  for (const r of results) warn(r.warnings);
  // One pair prints its result as before; several print them as a list.
  if (opts.json) printJson(results.length === 1 ? results[0] : results);
  else
    for (const r of results)
      process.stdout.write(`${r.key} = ${show(r.value)}  (stored in ${r.path})\n`);
}

async function cmdUnset(key: string, opts: HomeOpts) {
  const home = await homeOf(opts);
  const { unsetConfigValue } = await import("../host/config.ts");
  const r = unsetConfigValue(home, key);
  if (opts.json) printJson(r);
  else
    process.stdout.write(
      r.removed ? `${key} removed (back to its default)\n` : `${key} was not set\n`,
    );
}

async function cmdList(opts: HomeOpts) {
  const home = await homeOf(opts);
  const loaded = await loadStrict(home);
  const { listConfigValues } = await import("../host/config.ts");
  const rows = listConfigValues(loaded);
  if (opts.json) {
    printJson({ path: loaded.path, exists: loaded.exists, values: rows });
    return;
  }
  process.stdout.write(
    `# ${loaded.path}${loaded.exists ? "" : " (not created yet; showing defaults)"}\n`,
  );
  process.stdout.write(
    table(
      rows.map((r) => [r.key, show(r.value), r.env ? `(${r.source}: ${r.env})` : `(${r.source})`]),
    ),
  );
}

async function cmdSchema(opts: HomeOpts) {
  const { KEY_DEFS } = await import("../host/config-schema.ts");
  const keys = KEY_DEFS.map((d) => ({
    key: d.key,
    type: d.type,
    default: d.default ?? null,
    ...(d.values ? { values: d.values } : {}),
    ...(d.env ? { env: d.env } : {}),
    ...(d.secret ? { secret: true } : {}),
    description: d.description,
  }));
  if (opts.json) {
    printJson({ keys });
    return;
  }
  for (const k of keys) {
    const extra = [
      `type ${k.type}${k.values ? ` (${k.values.join("|")})` : ""}`,
      k.default !== null ? `default ${JSON.stringify(k.default)}` : null,
      k.env ? `env ${k.env}` : null,
    ]
      .filter(Boolean)
      .join(", ");
    process.stdout.write(`${k.key}\n    ${k.description}\n    ${extra}\n`);
  }
}

type DoctorCheck = { check: string; status: "ok" | "warn" | "fail"; detail: string };

type Inputs = Awaited<ReturnType<typeof resolutionInputs>>["inputs"];

async function providerStatuses(home: string, only?: string, given?: Inputs) {
  const inputs = given ?? (await resolutionInputs(home)).inputs;
  const { providerRegistry, providerDefinition } = await import("../providers/builtin.ts");
  const { resolveCredential } = await import("../providers/resolve.ts");
  const defs = only
    ? [providerDefinition(only, inputs.config)].filter((d) => d !== null)
    : providerRegistry(inputs.config);
  if (only && defs.length === 0) {
    throw new CliError(
      `no provider "${only}" is built in or configured`,
      "see `holon config providers list`",
    );
  }
  return defs.map((d) => {
    const c = resolveCredential(d, inputs);
    const available =
      d.transport_supported &&
      d.problems.length === 0 &&
      c.status !== "missing" &&
      c.status !== "error";
    const reasons = [
      ...(d.transport_supported ? [] : [`transport "${d.transport}" is not supported`]),
      ...d.problems,
      ...(c.reason ? [c.reason] : []),
    ];
    return {
      id: d.id,
      display_name: d.display_name,
      transport: d.transport,
      transport_supported: d.transport_supported,
      base_url: d.base_url,
      credential_source: d.auth.source,
      credential_kind: d.auth.kind,
      credential_status: c.status,
      credential_from: c.source_label,
      builtin: d.builtin,
      configured: d.configured,
      available,
      ...(reasons.length ? { reason: reasons.join("; ") } : {}),
    };
  });
}

async function cmdDoctor(opts: HomeOpts) {
  const home = await homeOf(opts);
  const { loadConfig, ConfigSource } = await import("../host/config.ts");
  const { homePaths } = await import("../host/paths.ts");
  const { credentialsFileStatus } = await import("../providers/credentials.ts");
  const { RETRY_POLICY } = await import("../providers/types.ts");
  const paths = homePaths(home);
  const checks: DoctorCheck[] = [];

  const loaded = loadConfig(home);
  if (loaded.error)
    checks.push({
      check: "config.json",
      status: "fail",
      detail: `${loaded.error.message} — ${loaded.error.hint}`,
    });
  else
    checks.push({
      check: "config.json",
      status: "ok",
      detail: loaded.exists
        ? `${loaded.path} is valid`
        : `${loaded.path} does not exist; using defaults`,
    });
  for (const w of loaded.warnings) checks.push({ check: "environment", status: "warn", detail: w });
  for (const o of loaded.overrides) {
    checks.push({ check: "environment", status: "ok", detail: `${o.env} overrides ${o.key}` });
  }

  const credFile = credentialsFileStatus(paths.credentials);
  const source = new ConfigSource({ home });
  const creds = source.credentials();
  if (!credFile.exists)
    checks.push({
      check: "credentials.json",
      status: "ok",
      detail: "no credential store yet (none stored)",
    });
  else if (creds.error)
    checks.push({
      check: "credentials.json",
      status: "fail",
      detail: `${creds.error.message} — ${creds.error.hint}`,
    });
  else
    checks.push({
      check: "credentials.json",
      status: "ok",
      detail: `mode ${credFile.mode}, ${Object.keys(creds.profiles).length} profile(s)`,
    });

  const values = source.current().values;
  const state = source.modelState();
  const candidates = source.candidates().map((c) => ({
    model_ref: c.model_ref,
    provider: c.provider_id,
    transport: c.unavailable_reason && !c.base_url ? null : c.transport,
    base_url: c.base_url || null,
    available: c.unavailable_reason === undefined,
    credential_from: c.credential?.source_label ?? (c.unavailable_reason ? null : "none"),
    ...(c.unavailable_reason ? { reason: c.unavailable_reason } : {}),
  }));
  if (!values.model.default) {
    checks.push({
      check: "model.default",
      status: "fail",
      detail: "no default model; set one with `holon config set model.default <provider>/<model>`",
    });
  } else {
    const usable = candidates.filter((c) => c.available);
    const first = candidates[0]!;
    if (first.available)
      checks.push({ check: "model.default", status: "ok", detail: `${first.model_ref} is usable` });
    else
      checks.push({
        check: "model.default",
        status: usable.length ? "warn" : "fail",
        detail: `${first.model_ref} is not usable: ${first.reason}`,
      });
    for (const c of candidates.slice(1)) {
      checks.push({
        check: `fallback ${c.model_ref}`,
        status: c.available ? "ok" : "warn",
        detail: c.available ? "usable" : c.reason!,
      });
    }
    if (usable.length === 0) {
      checks.push({
        check: "models",
        status: "fail",
        detail: "no configured model can be called; every turn would fail",
      });
    }
  }
  const providers = await providerStatuses(home, undefined, source.inputs());
  for (const p of providers.filter(
    (p) => p.configured && (!p.transport_supported || p.reason?.includes("custom provider")),
  )) {
    checks.push({ check: `provider ${p.id}`, status: "fail", detail: p.reason ?? "unusable" });
  }

  // The sandbox: what this machine confines under the host's settings (agents may override
  // the mode; `holon status` shows theirs).
  const { SandboxService } = await import("../sandbox/service.ts");
  const sandbox = new SandboxService({
    config: () => values.sandbox,
    holonHome: home,
    userHome: process.env["HOME"] ?? "/",
    pathEnv: process.env["PATH"],
  }).summary(null);
  checks.push({
    check: "sandbox",
    status: sandbox.state === "enforced" ? "ok" : sandbox.mode === "required" ? "fail" : "warn",
    detail:
      sandbox.state === "enforced"
        ? `enforced (${sandbox.backend}, mode ${sandbox.mode}): shell_filesystem, secrets and child_processes enforced; network ${sandbox.enforcement.network} (sandbox.network ${sandbox.network}: ${sandbox.why.network})`
        : `not_enforced: ${sandbox.reason}`,
  });

  // The runtime, the store's files and the disk (cli/debug.ts).
  checks.push(...(await (await import("./debug.ts")).runtimeChecks(home)));

  const failed = checks.some((c) => c.status === "fail");
  const report = {
    ok: !failed,
    home,
    checks,
    model_state: state,
    candidates,
    providers: providers.filter((p) => p.configured || candidates.some((c) => c.provider === p.id)),
    retry_policy: RETRY_POLICY,
    sandbox,
  };
  if (opts.json) printJson(report);
  else {
    process.stdout.write(table(checks.map((c) => [c.status.toUpperCase(), c.check, c.detail])));
    process.stdout.write(
      `\nmodel: ${state.effective_model ?? "(none)"}; fallbacks: ${state.effective_fallback_models.join(", ") || "(none)"}${state.provider_fallback_disabled ? " (fallback disabled)" : ""}\n`,
    );
    process.stdout.write(
      `retry policy: up to ${RETRY_POLICY.max_retries} retries per request on ${RETRY_POLICY.retryable.join(", ")}; fail fast on ${RETRY_POLICY.fail_fast.join(", ")}\n`,
    );
  }
  if (failed) process.exitCode = 1;
}

type ProviderSetOpts = HomeOpts & {
  transport?: string;
  baseUrl?: string;
  credentialSource?: string;
  credentialKind?: string;
  credentialEnv?: string;
  credentialProfile?: string;
  credentialExternal?: string;
  displayName?: string;
};

async function cmdProvidersSet(id: string, opts: ProviderSetOpts) {
  const home = await homeOf(opts);
  const { setProvider } = await import("../host/config.ts");
  const fields: Record<string, string> = {};
  const map: [keyof ProviderSetOpts, string][] = [
    ["transport", "transport"],
    ["baseUrl", "base_url"],
    ["credentialSource", "credential_source"],
    ["credentialKind", "credential_kind"],
    ["credentialEnv", "credential_env"],
    ["credentialProfile", "credential_profile"],
    ["credentialExternal", "credential_external"],
    ["displayName", "display_name"],
  ];
  for (const [opt, field] of map) {
    const v = opts[opt];
    if (typeof v === "string") fields[field] = v;
  }
  const r = setProvider(home, id, fields);
  if (opts.json) printJson(r);
  else
    process.stdout.write(
      `provider ${id} ${r.created ? "added" : "updated"} (stored in ${r.path})\n`,
    );
}

async function cmdProvidersGet(id: string, opts: HomeOpts) {
  const home = await homeOf(opts);
  const { inputs } = await resolutionInputs(home);
  const { providerDefinition } = await import("../providers/builtin.ts");
  const { providerView } = await import("../host/config.ts");
  const def = providerDefinition(id, inputs.config);
  if (!def)
    throw new CliError(
      `no provider "${id}" is built in or configured`,
      "see `holon config providers list`",
    );
  const [status] = await providerStatuses(home, id);
  const view = {
    ...providerView(def),
    credential_status: status!.credential_status,
    credential_from: status!.credential_from,
    available: status!.available,
    ...(status!.reason ? { reason: status!.reason } : {}),
  };
  if (opts.json) printJson(view);
  else {
    for (const [k, v] of Object.entries(view)) process.stdout.write(`${k}: ${show(v)}\n`);
  }
}

async function cmdProvidersList(opts: HomeOpts) {
  const home = await homeOf(opts);
  const providers = await providerStatuses(home);
  if (opts.json) {
    printJson({ providers });
    return;
  }
  process.stdout.write(
    table([
      ["PROVIDER", "TRANSPORT", "BASE URL", "CREDENTIAL", "STATUS"],
      ...providers.map((p) => [
        p.id + (p.builtin ? "" : " (custom)"),
        p.transport + (p.transport_supported ? "" : " (unsupported)"),
        p.base_url,
        `${p.credential_source}/${p.credential_kind}`,
        p.available ? (p.credential_from ?? p.credential_status) : p.credential_status,
      ]),
    ]),
  );
}

async function cmdProvidersRemove(id: string, opts: HomeOpts) {
  const home = await homeOf(opts);
  const { removeProvider } = await import("../host/config.ts");
  const r = removeProvider(home, id);
  if (opts.json) printJson(r);
  else if (!r.removed) {
    throw new CliError(
      `provider ${id} has no entry in config.json`,
      r.builtin
        ? `${id} is built in; its defaults cannot be removed`
        : "see `holon config providers list`",
    );
  } else
    process.stdout.write(
      r.builtin ? `provider ${id} reset to its built-in defaults\n` : `provider ${id} removed\n`,
    );
}

async function cmdProvidersDoctor(id: string | undefined, opts: HomeOpts) {
  const home = await homeOf(opts);
  const providers = await providerStatuses(home, id);
  const { RETRY_POLICY } = await import("../providers/types.ts");
  if (opts.json) {
    printJson({ providers, retry_policy: RETRY_POLICY });
    return;
  }
  process.stdout.write(
    table([
      ["PROVIDER", "AVAILABLE", "TRANSPORT", "CREDENTIAL", "DETAIL"],
      ...providers.map((p) => [
        p.id,
        p.available ? "yes" : "no",
        p.transport + (p.transport_supported ? "" : " (unsupported)"),
        `${p.credential_source}/${p.credential_kind}: ${p.credential_status}`,
        p.reason ?? p.credential_from ?? "",
      ]),
    ]),
  );
  process.stdout.write(
    `\nretry policy: max ${RETRY_POLICY.max_retries} retries per request, backoff ${RETRY_POLICY.initial_backoff_ms}ms x${RETRY_POLICY.backoff_multiplier} up to ${RETRY_POLICY.max_backoff_ms}ms, timeout ${RETRY_POLICY.request_timeout_ms}ms\n` +
      `  retried: ${RETRY_POLICY.retryable.join(", ")}\n  fail fast: ${RETRY_POLICY.fail_fast.join(", ")}\n`,
  );
}

type CredSetOpts = HomeOpts & { kind?: string; stdin?: boolean; material?: string };

async function cmdCredentialsSet(profile: string, opts: CredSetOpts) {
  if (!opts.kind) throw new CliError("--kind is required", "e.g. --kind api_key");
  if (opts.stdin && opts.material !== undefined)
    throw new CliError("use either --stdin or --material, not both");
  if (!opts.stdin && opts.material === undefined) {
    throw new CliError(
      "no credential given",
      "pass --stdin and paste it (preferred), or --material <secret>",
    );
  }
  if (opts.material !== undefined) {
    warn(["--material leaves the secret in shell history and the process list; prefer --stdin"]);
  }
  const material = opts.stdin ? await readSecret() : opts.material!;
  const home = await homeOf(opts);
  const { homePaths } = await import("../host/paths.ts");
  const { setCredential } = await import("../providers/credentials.ts");
  const path = homePaths(home).credentials;
  let created: boolean;
  try {
    ({ created } = setCredential(path, profile, opts.kind as never, material));
  } catch (err) {
    if (err instanceof Error && !("hint" in err)) throw new CliError(err.message);
    throw err;
  }
  const r = {
    profile,
    kind: opts.kind,
    status: "configured",
    created,
    path,
    applied_via: "offline_store",
  };
  if (opts.json) printJson(r);
  else
    process.stdout.write(
      `credential ${profile} (${opts.kind}) ${created ? "stored" : "replaced"} in ${path}\n`,
    );
}

async function cmdCredentialsList(opts: HomeOpts) {
  const home = await homeOf(opts);
  const { homePaths } = await import("../host/paths.ts");
  const { listCredentials } = await import("../providers/credentials.ts");
  const profiles = listCredentials(homePaths(home).credentials);
  if (opts.json) {
    printJson({ profiles });
    return;
  }
  if (profiles.length === 0) {
    process.stdout.write("no credential profiles stored\n");
    return;
  }
  process.stdout.write(
    table([
      ["PROFILE", "KIND", "STATUS", "UPDATED"],
      ...profiles.map((p) => [p.profile, p.kind, p.redacted, p.updated_at]),
    ]),
  );
}

async function cmdCredentialsRemove(profile: string, opts: HomeOpts) {
  const home = await homeOf(opts);
  const { homePaths } = await import("../host/paths.ts");
  const { removeCredential } = await import("../providers/credentials.ts");
  const path = homePaths(home).credentials;
  const removed = removeCredential(path, profile);
  if (opts.json) printJson({ profile, removed, path, applied_via: "offline_store" });
  else if (!removed)
    throw new CliError(`no credential profile "${profile}"`, "see `holon config credentials list`");
  else process.stdout.write(`credential ${profile} removed\n`);
}

async function cmdModelsList(opts: HomeOpts) {
  const home = await homeOf(opts);
  const { inputs } = await resolutionInputs(home);
  const { listModels } = await import("../providers/catalog.ts");
  const listing = listModels(inputs);
  if (opts.json) {
    printJson(listing);
    return;
  }
  process.stdout.write(
    table([
      ["MODEL", "AVAILABLE", "TRANSPORT", "CREDENTIAL", "ROLE", "CONTEXT"],
      ...listing.available_models.map((m) => [
        m.id,
        m.available ? "yes" : "no",
        m.transport || "-",
        m.credential_source ?? "missing",
        m.is_default ? "default" : m.is_fallback ? "fallback" : "",
        m.context_window_tokens ? String(m.context_window_tokens) : "",
      ]),
    ]),
  );
  const unavailable = listing.available_models.filter(
    (m) => (m.is_default || m.is_fallback) && !m.available,
  );
  for (const m of unavailable) process.stdout.write(`\n${m.id}: ${m.unavailable_reason}`);
  if (unavailable.length) process.stdout.write("\n");
}

// ---------------------------------------------------------------------------------------
// Registration.

export function registerConfigCommands(program: Command): void {
  const config = program
    .command("config")
    .description("Runtime configuration: model selection, providers, credentials")
    .addHelpText(
      "after",
      "\nChanges are written to files under HOLON_HOME; a running host applies them to its next turn.",
    );
  const withCommon = (cmd: Command, json = true) => {
    cmd.option(...homeFlag);
    if (json) cmd.option(...jsonFlag);
    return cmd;
  };

  withCommon(
    config
      .command("get")
      .description("Print the effective value of a key")
      .argument("<key>", "config key, e.g. model.default"),
  ).action(action((key: string, opts: HomeOpts) => run(() => cmdGet(key, opts))));
  withCommon(
    config
      .command("set")
      .description(
        "Store a key, or several at once (each value is read as JSON when it parses, else as text)",
      )
      .argument("<key>", "config key")
      .argument("<value>", "new value")
      .argument("[more...]", "further <key> <value> pairs, stored together with the first"),
  ).action(
    action((key: string, value: string, more: string[], opts: HomeOpts) =>
      run(() => cmdSet(key, value, more, opts)),
    ),
  );
  withCommon(
    config
      .command("unset")
      .description("Remove a key so its default applies again")
      .argument("<key>", "config key"),
  ).action(action((key: string, opts: HomeOpts) => run(() => cmdUnset(key, opts))));
  withCommon(
    config.command("list").description("Show every effective setting and where it comes from"),
  ).action(action((opts: HomeOpts) => run(() => cmdList(opts))));
  withCommon(
    config.command("schema").description("Describe every key: type, default, environment override"),
  ).action(action((opts: HomeOpts) => run(() => cmdSchema(opts))));
  withCommon(
    config.command("doctor").description("Check configuration, credentials and model availability"),
  ).action(action((opts: HomeOpts) => run(() => cmdDoctor(opts))));

  const providers = config.command("providers").description("Provider definitions (no secrets)");
  const ps = providers
    .command("set")
    .description("Add a provider or change fields of one (built-ins can be overridden)")
    .argument("<id>", "provider id, the first part of model refs");
  ps.addOption(
    ps
      .createOption("--transport <transport>", "wire protocol")
      .choices([
        "openai_responses",
        "openai_chat_completions",
        "anthropic_messages",
        "openai_codex_responses",
      ]),
  );
  ps.option(
    "--base-url <url>",
    "endpoint base URL (/v1 included for OpenAI transports, not for anthropic_messages)",
  );
  ps.addOption(
    ps
      .createOption("--credential-source <source>", "where the credential comes from")
      .choices(["none", "env", "credential_profile", "external_cli"]),
  );
  ps.addOption(
    ps
      .createOption("--credential-kind <kind>", "what the credential is")
      .choices(["none", "api_key", "bearer_token", "session_token"]),
  );
  ps.option("--credential-env <name>", "environment variable to read (source env)");
  ps.option("--credential-profile <profile>", "credential profile id (source credential_profile)");
  ps.option(
    "--credential-external <name>",
    "external credential owner (source external_cli; only codex)",
  );
  ps.option("--display-name <name>", "name shown in listings");
  withCommon(ps).action(
    action((id: string, opts: ProviderSetOpts) => run(() => cmdProvidersSet(id, opts))),
  );
  withCommon(
    providers
      .command("get")
      .description("Show one provider and its credential status")
      .argument("<id>", "provider id"),
  ).action(action((id: string, opts: HomeOpts) => run(() => cmdProvidersGet(id, opts))));
  withCommon(
    providers.command("list").description("List built-in and configured providers"),
  ).action(action((opts: HomeOpts) => run(() => cmdProvidersList(opts))));
  withCommon(
    providers
      .command("remove")
      .description("Remove a provider entry (a built-in one returns to its defaults)")
      .argument("<id>", "provider id"),
  ).action(action((id: string, opts: HomeOpts) => run(() => cmdProvidersRemove(id, opts))));
  withCommon(
    providers
      .command("doctor")
      .description("Check provider availability and show the retry policy")
      .argument("[id]", "one provider (default: all)"),
  ).action(
    action((id: string | undefined, opts: HomeOpts) => run(() => cmdProvidersDoctor(id, opts))),
  );

  const credentials = config
    .command("credentials")
    .description("Secret credential profiles (owner-only file)");
  const cs = credentials
    .command("set")
    .description("Store a credential under a profile id, e.g. openai:default")
    .argument("<profile>", "credential profile id");
  cs.addOption(
    cs
      .createOption("--kind <kind>", "credential kind")
      .choices(["api_key", "bearer_token", "session_token"]),
  );
  cs.option("--stdin", "read the secret from standard input (hidden when typed)");
  cs.option("--material <secret>", "the secret itself (ends up in shell history; prefer --stdin)");
  withCommon(cs).action(
    action((profile: string, opts: CredSetOpts) => run(() => cmdCredentialsSet(profile, opts))),
  );
  withCommon(
    credentials.command("list").description("List stored profiles (secrets redacted)"),
  ).action(action((opts: HomeOpts) => run(() => cmdCredentialsList(opts))));
  withCommon(
    credentials
      .command("remove")
      .description("Delete a stored profile")
      .argument("<profile>", "profile id"),
  ).action(
    action((profile: string, opts: HomeOpts) => run(() => cmdCredentialsRemove(profile, opts))),
  );

  const models = config.command("models").description("Model catalog");
  withCommon(
    models.command("list").description("List known models and whether each can be called now"),
  ).action(action((opts: HomeOpts) => run(() => cmdModelsList(opts))));
}
