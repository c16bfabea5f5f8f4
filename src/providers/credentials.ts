// Holon's file-backed credential store: <holon_home>/credentials.json, owner-only (0600),
// keyed by credential profile id. Secret material never leaves this module except as a
// ResolvedCredential handed to a transport; everything printable goes through redact().
import { closeSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync } from "node:fs";
import { dirname } from "node:path";
import { CREDENTIAL_KINDS, type CredentialKind } from "./types.ts";
import { atomicWriteFile } from "../store/files.ts";

export type StoredCredential = {
  kind: CredentialKind;
  material: string;
  created_at: string;
  updated_at: string;
};

export type CredentialsFile = {
  version: 1;
  profiles: Record<string, StoredCredential>;
};

/** What the resolver sees: the profiles, or why they could not be read. */
export type CredentialsSnapshot = {
  path: string;
  profiles: Record<string, StoredCredential>;
  error: { message: string; hint: string } | null;
};

export class CredentialStoreError extends Error {
  readonly path: string;
  readonly hint: string;
  constructor(path: string, message: string, hint: string) {
    super(`${path}: ${message}`);
    this.path = path;
    this.hint = hint;
  }
}

/** Profile ids are labels such as `openai:default`, `deepseek` or `openai:me@example.com`. */
export const PROFILE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}$/;

const SETTABLE_KINDS = CREDENTIAL_KINDS.filter((k) => k !== "none");

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Group/other permission bits make the file unusable (skipped where modes mean nothing). */
function checkMode(path: string): void {
  if (process.platform === "win32") return;
  const st = statSync(path);
  if ((st.mode & 0o077) !== 0) {
    const mode = (st.mode & 0o777).toString(8).padStart(4, "0");
    throw new CredentialStoreError(
      path,
      `permissions are ${mode}; the credential file must be readable by its owner only, so Holon will not read it`,
      `run: chmod 600 ${path}`,
    );
  }
}

function parseFile(path: string, text: string): CredentialsFile {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new CredentialStoreError(
      path,
      `not valid JSON (${(err as Error).message})`,
      "restore it from a backup, or remove it and store the credentials again with `holon config credentials set`",
    );
  }
  const bad = (what: string) =>
    new CredentialStoreError(
      path,
      what,
      "Holon manages this file; remove the broken entry or the file and store the credential again",
    );
  if (!isRecord(data) || !isRecord(data.profiles))
    throw bad('expected {"version": 1, "profiles": {...}}');
  const profiles: Record<string, StoredCredential> = {};
  for (const [id, raw] of Object.entries(data.profiles)) {
    if (!isRecord(raw)) throw bad(`profiles.${id}: expected an object`);
    const kind = raw.kind;
    if (typeof kind !== "string" || !(SETTABLE_KINDS as readonly string[]).includes(kind))
      throw bad(`profiles.${id}.kind: expected one of ${SETTABLE_KINDS.join(", ")}`);
    if (typeof raw.material !== "string" || raw.material === "")
      throw bad(`profiles.${id}.material: expected a non-empty string`);
    profiles[id] = {
      kind: kind as CredentialKind,
      material: raw.material,
      created_at: typeof raw.created_at === "string" ? raw.created_at : "",
      updated_at: typeof raw.updated_at === "string" ? raw.updated_at : "",
    };
  }
  return { version: 1, profiles };
}

/** Read the store. A missing file is an empty store; a readable-by-others file is refused. */
export function readCredentials(path: string): CredentialsFile {
  let text: string;
  try {
    checkMode(path);
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, profiles: {} };
    throw err;
  }
  return parseFile(path, text);
}

/** Never throws: errors become part of the snapshot so resolution can explain them. */
export function credentialsSnapshot(path: string): CredentialsSnapshot {
  try {
    return { path, profiles: readCredentials(path).profiles, error: null };
  } catch (err) {
    if (err instanceof CredentialStoreError) {
      return { path, profiles: {}, error: { message: err.message, hint: err.hint } };
    }
    return {
      path,
      profiles: {},
      error: {
        message: `${path}: ${(err as Error).message}`,
        hint: "check the file and its permissions",
      },
    };
  }
}

/**
 * Run `fn` holding an exclusive lock file next to `target`, so two CLI processes changing
 * the same file do not lose each other's update. A lock older than 30 s is treated as stale.
 */
export function withFileLock<T>(target: string, fn: () => T): T {
  const lock = `${target}.lock`;
  mkdirSync(dirname(lock), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + 5_000;
  let fd: number | null = null;
  while (fd === null) {
    try {
      fd = openSync(lock, "wx", 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > 30_000) {
          unlinkSync(lock);
          continue;
        }
      } catch {
        continue;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${target} is locked by another holon process (remove ${lock} if none is running)`,
        );
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
    }
  }
  try {
    return fn();
  } finally {
    closeSync(fd);
    try {
      unlinkSync(lock);
    } catch {
      // removed by someone who judged it stale
    }
  }
}

function writeCredentials(path: string, file: CredentialsFile): void {
  atomicWriteFile(path, JSON.stringify(file, null, 2) + "\n", { mkdir: true });
}

/** Clean up what a paste usually carries: surrounding whitespace and a trailing newline. */
export function normalizeMaterial(raw: string): string {
  const material = raw.trim();
  if (!material) throw new Error("the credential is empty");
  if (/[\r\n]/.test(material))
    throw new Error("the credential spans several lines; paste one line");
  if (/\s/.test(material)) throw new Error("the credential contains whitespace");
  return material;
}

export function validateProfileId(id: string): void {
  if (!PROFILE_ID_PATTERN.test(id)) {
    throw new Error(
      `invalid credential profile id "${id}": use letters, digits and . _ : @ + - (e.g. openai:default)`,
    );
  }
}

/** Store (or replace) one profile. Refuses to touch a store it cannot read safely. */
export function setCredential(
  path: string,
  profileId: string,
  kind: CredentialKind,
  rawMaterial: string,
  now: Date = new Date(),
): { created: boolean } {
  validateProfileId(profileId);
  if (!(SETTABLE_KINDS as readonly string[]).includes(kind)) {
    throw new Error(`invalid credential kind "${kind}" (use one of ${SETTABLE_KINDS.join(", ")})`);
  }
  const material = normalizeMaterial(rawMaterial);
  return withFileLock(path, () => {
    const file = readCredentials(path);
    const prev = file.profiles[profileId];
    const ts = now.toISOString();
    file.profiles[profileId] = {
      kind,
      material,
      created_at: prev?.created_at || ts,
      updated_at: ts,
    };
    writeCredentials(path, file);
    return { created: !prev };
  });
}

export function removeCredential(path: string, profileId: string): boolean {
  return withFileLock(path, () => {
    const file = readCredentials(path);
    if (!(profileId in file.profiles)) return false;
    delete file.profiles[profileId];
    writeCredentials(path, file);
    return true;
  });
}

/** A printable stand-in for a secret: at most its last four characters, and only for long ones. */
export function redact(secret: string | null | undefined): string {
  if (!secret) return "missing";
  if (secret.length < 16) return "configured";
  return `configured (…${secret.slice(-4)})`;
}

export type CredentialListing = {
  profile: string;
  kind: CredentialKind;
  status: "configured";
  redacted: string;
  created_at: string;
  updated_at: string;
};

export function listCredentials(path: string): CredentialListing[] {
  const file = readCredentials(path);
  return Object.entries(file.profiles)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([profile, c]) => ({
      profile,
      kind: c.kind,
      status: "configured",
      redacted: redact(c.material),
      created_at: c.created_at,
      updated_at: c.updated_at,
    }));
}

/** Permission state of the store for `config doctor`. */
export function credentialsFileStatus(path: string): {
  exists: boolean;
  mode: string | null;
  owner_only: boolean;
} {
  try {
    const st = statSync(path);
    return {
      exists: true,
      mode: (st.mode & 0o777).toString(8).padStart(4, "0"),
      owner_only: process.platform === "win32" || (st.mode & 0o077) === 0,
    };
  } catch {
    return { exists: false, mode: null, owner_only: true };
  }
}
