// Which database a home keeps its records in. Without a database URL it is the embedded
// SQLite file (<home>/holon.db); with one (`store.database_url` in config.json, or the
// HOLON_DATABASE_URL variable, which wins) it is that Postgres database. The URL is a secret:
// `config get`/`config list` show it with its password masked (maskDatabaseUrl), commands
// never inherit it (databaseSecrets feeds the command policy, host/command-policy.ts), and
// the password may live in a credential profile (`store.database_credential`) instead.
//
// This module is read before the host opens its store, so it stays cheap: it reads
// config.json and credentials.json itself (no zod, no configuration machinery) and never
// loads `pg` or anything under store/pg* — an embedded host must not pay for them.
import { readFileSync } from "node:fs";
import { HolonError } from "../domain/errors.ts";
import { readCredentials } from "../providers/credentials.ts";
import { homePaths } from "./paths.ts";
import { maskDatabaseUrl } from "../store/url.ts";

export { maskDatabaseUrl };

/** The variable that sets the database URL; it overrides `store.database_url`. */
export const DATABASE_URL_ENV = "HOLON_DATABASE_URL";
export const DATABASE_URL_KEY = "store.database_url";
export const DATABASE_CREDENTIAL_KEY = "store.database_credential";

/**
 * Variables Postgres clients read a password (or where to find one) from, withheld from
 * commands whenever a database URL is configured: a user who keeps the same secret under a
 * conventional name too must not hand it to the model.
 */
export const DATABASE_ENV_NAMES = [
  "DATABASE_URL",
  "PGPASSWORD",
  "PGPASSFILE",
  "PGSERVICEFILE",
] as const;

/**
 * A password shorter than this is withheld from commands only where it stands as a whole
 * value or inside a URL, never as any substring: `postgres://holon:holon@…` must not strip
 * PATH or HOME because they contain "holon".
 */
export const MIN_FRAGMENT_PASSWORD = 12;

const SCHEMES = new Set(["postgres:", "postgresql:"]);

/** Why `raw` is not a database URL Holon accepts, or null when it is one. Never echoes it. */
export function databaseUrlProblem(raw: string): string | null {
  if (raw.trim() === "") return "the database URL is empty";
  if (raw !== raw.trim()) return "the database URL has leading or trailing whitespace";
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "not a URL; expected postgres://user[:password]@host[:port]/database[?sslmode=…]";
  }
  if (!SCHEMES.has(u.protocol)) {
    return `expected a postgres:// or postgresql:// URL, not ${u.protocol}//…`;
  }
  if (u.hash !== "") return "a database URL has no #fragment";
  return null;
}

/** The URL, parsed; a HolonError of kind `config_invalid` naming `from` when it is not one. */
export function parseDatabaseUrl(raw: string, from: string): URL {
  const problem = databaseUrlProblem(raw);
  if (problem !== null) {
    throw new HolonError("config_invalid", `${from}: ${problem}`, {
      status: 500,
      hint:
        from === DATABASE_URL_ENV
          ? `set ${DATABASE_URL_ENV} to postgres://user@host:5432/db (any sslmode in its query), or unset it`
          : `correct ${DATABASE_URL_KEY} in config.json by hand (a postgres://user@host:5432/db URL), or remove it to keep the records in SQLite`,
    });
  }
  return new URL(raw);
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The password the URL carries, as `pg` reads it (a `password=` parameter wins), or null. */
export function urlPassword(u: URL): string | null {
  const param = u.searchParams.get("password");
  if (param) return param;
  return u.password ? decode(u.password) : null;
}

/**
 * `url` with `password` filled in: in the user part when the URL names a host, else (a Unix
 * socket URL such as `postgres:///holon?host=/run/postgresql`) as a `password=` parameter.
 * Everything else, the query (`sslmode`, `sslrootcert`, …) included, is kept as written.
 */
export function withPassword(url: string, password: string): string {
  const u = new URL(url);
  const encoded = encodeURIComponent(password);
  if (u.host !== "") {
    u.password = encoded;
    return u.toString();
  }
  u.search = u.search ? `${u.search}&password=${encoded}` : `?password=${encoded}`;
  return u.toString();
}

/** What commands must not inherit because of a database URL (see tasks/env.ts). */
export type DatabaseSecrets = {
  /** Variable names withheld unless the allowlist names them. */
  names: string[];
  /** Values no variable may have, whatever its name. */
  values: string[];
  /** Strings no variable's value may contain, whatever its name. */
  fragments: string[];
};

/**
 * The secrets a configured database URL (as written, and as resolved with its password)
 * puts in reach of a command. Nothing when no URL is configured. Never throws: a URL that
 * does not parse is withheld as a whole value.
 */
export function databaseSecrets(
  urls: readonly (string | null | undefined)[],
  password: string | null = null,
): DatabaseSecrets {
  const given = urls.filter((u): u is string => typeof u === "string" && u.trim() !== "");
  if (given.length === 0) return { names: [], values: [], fragments: [] };
  const values = new Set<string>();
  const fragments = new Set<string>();
  const passwords = new Set<string>();
  if (password) passwords.add(password);
  for (const url of given) {
    fragments.add(url);
    try {
      const pw = urlPassword(new URL(url));
      if (pw) passwords.add(pw);
    } catch {
      // withheld as a whole (the fragment above)
    }
  }
  for (const pw of passwords) {
    values.add(pw);
    for (const form of new Set([pw, encodeURIComponent(pw)])) {
      fragments.add(`:${form}@`);
      fragments.add(`password=${form}`);
    }
    if (pw.length >= MIN_FRAGMENT_PASSWORD) fragments.add(pw);
  }
  return { names: [...DATABASE_ENV_NAMES], values: [...values], fragments: [...fragments] };
}

/**
 * A JSON parser's message without the text it quotes around the fault (V8 quotes a stretch
 * of the input, which may hold a secret such as the database URL).
 */
export function withoutJsonSnippet(message: string): string {
  return message.replace(/,\s*(?:\.\.\.)?"[\s\S]*"(?:\.\.\.)?\s+is not valid JSON/g, "");
}

type StoreSection = { database_url?: unknown; database_credential?: unknown };

/**
 * The `store` section of config.json, read without the configuration machinery. A file that
 * cannot be read, or cannot be parsed and mentions a database, is refused: the host cannot
 * tell which store is meant, and guessing SQLite would split the records. One that does not
 * parse and names no database is an embedded home, whose configuration problems are
 * reported where they always were.
 */
function readStoreSection(home: string): StoreSection {
  const path = homePaths(home).config;
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    // No file, or a home that is not a directory (which opening the home reports itself).
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return {};
    throw unreadable(path, `cannot read: ${(err as Error).message}`);
  }
  if (text.trim() === "") return {};
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // Not the parser's message: it quotes the text around the fault, which may be the URL.
    if (!/database_(url|credential)/.test(text)) return {};
    throw unreadable(path, "not valid JSON");
  }
  const store = (data as { store?: unknown } | null)?.store;
  return typeof store === "object" && store !== null ? (store as StoreSection) : {};
}

function unreadable(path: string, why: string): HolonError {
  return new HolonError(
    "config_invalid",
    `${path}: ${why}, so Holon cannot tell which store this home uses`,
    {
      status: 500,
      hint: "fix the file by hand; Holon does not rewrite a config.json it cannot parse",
    },
  );
}

/** The password stored under credential profile `profile`. */
function credentialPassword(home: string, profile: string): string {
  const path = homePaths(home).credentials;
  let material: string | undefined;
  try {
    material = readCredentials(path).profiles[profile]?.material;
  } catch (err) {
    const hint = (err as { hint?: unknown }).hint;
    throw new HolonError(
      "config_invalid",
      `${DATABASE_CREDENTIAL_KEY} names credential profile "${profile}", but the credential store cannot be read: ${withoutJsonSnippet((err as Error).message)}`,
      { status: 500, hint: typeof hint === "string" ? hint : "check the file and its permissions" },
    );
  }
  if (!material) {
    throw new HolonError(
      "config_invalid",
      `${DATABASE_CREDENTIAL_KEY} names credential profile "${profile}", which is not stored`,
      {
        status: 500,
        hint: `store the database password: holon config credentials set ${profile} --kind api_key --stdin`,
      },
    );
  }
  return material;
}

/**
 * The URL this home's host connects with, or null for the embedded SQLite store.
 * HOLON_DATABASE_URL (when set and not empty) beats `store.database_url`; when the URL
 * carries no password and `store.database_credential` names a profile, that profile's secret
 * is filled in. The query (`sslmode` and the rest) is passed on as written. A URL that does
 * not parse, or a named profile that is missing, is a HolonError of kind `config_invalid`.
 */
export function resolveDatabaseUrl(home: string, env: NodeJS.ProcessEnv): string | null {
  const fromEnv = env[DATABASE_URL_ENV];
  const envSet = fromEnv !== undefined && fromEnv.trim() !== "";
  let section: StoreSection;
  try {
    section = readStoreSection(home);
  } catch (err) {
    // The variable alone says which database; the file only adds the credential profile.
    if (!envSet) throw err;
    section = {};
  }
  let raw: string;
  let from: string;
  if (envSet) {
    raw = fromEnv;
    from = DATABASE_URL_ENV;
  } else if (section.database_url === undefined || section.database_url === null) {
    return null;
  } else if (typeof section.database_url !== "string") {
    throw new HolonError("config_invalid", `${DATABASE_URL_KEY}: expected a string`, {
      status: 500,
      hint: `correct ${DATABASE_URL_KEY} in config.json by hand (a postgres://user@host:5432/db URL), or remove it to keep the records in SQLite`,
    });
  } else {
    raw = section.database_url;
    from = DATABASE_URL_KEY;
  }
  const url = parseDatabaseUrl(raw, from);
  if (urlPassword(url) !== null) return raw;
  const profile = section.database_credential;
  if (typeof profile !== "string" || profile === "") return raw;
  return withPassword(raw, credentialPassword(home, profile));
}
