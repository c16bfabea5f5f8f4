// `holon store export | import | verify`: a portable dump of the home's database, taken with
// the host stopped or running, restored into a home at the same path, and compared with a
// home. These commands read the database file themselves (through SQLite's own locking; an
// online export reads a snapshot), so they need no host; import takes the home's lock, so no
// host can start on the database while it is being restored.
//
// A home whose records are in Postgres (`store.database_url`, HOLON_DATABASE_URL, or
// --database-url here) is dumped from and restored into that database instead; the Postgres
// code is loaded only then.
import { readFileSync } from "node:fs";
import { Option, type Command } from "commander";
import { CliError, action, homeOption, jsonOption, printJson } from "./output.ts";

type Flags = { home?: string; json?: boolean; databaseUrl?: string };

const databaseUrlOption = () =>
  new Option(
    "--database-url <url>",
    "a Postgres database (postgres://user@host:5432/db) instead of the home's configured store",
  );

/** The Postgres database the command works on, or null for the home's SQLite file. */
async function databaseUrl(flags: Flags, home: string): Promise<string | null> {
  const { resolveDatabaseUrl, parseDatabaseUrl } = await import("../host/database-url.ts");
  if (flags.databaseUrl !== undefined) {
    parseDatabaseUrl(flags.databaseUrl, "--database-url");
    return flags.databaseUrl;
  }
  return resolveDatabaseUrl(home, process.env);
}

/** The URL with its password masked, for what the commands print. */
async function shown(url: string): Promise<string> {
  return (await import("../host/database-url.ts")).maskDatabaseUrl(url);
}

/** The home, its database, and whether a live host owns it now. */
async function target(flags: Flags) {
  const { resolveHome, homePaths } = await import("../host/paths.ts");
  const { pidAlive } = await import("../host/lock.ts");
  const paths = homePaths(resolveHome(flags.home));
  let online = false;
  try {
    const pid = Number.parseInt(readFileSync(paths.lockFile, "utf8").trim(), 10);
    online = Number.isFinite(pid) && pidAlive(pid);
  } catch {
    // no lock: no host
  }
  return { paths, online };
}

/** A HolonError from the dump code becomes one line, its hint, and exit code 1. */
async function edge<T>(fn: () => Promise<T> | T): Promise<T> {
  const { HolonError } = await import("../domain/errors.ts");
  try {
    return await fn();
  } catch (err) {
    if (err instanceof HolonError) throw new CliError(`${err.message} (${err.kind})`, err.hint);
    throw err;
  }
}

async function exportCmd(dir: string, flags: Flags): Promise<void> {
  const { paths, online } = await target(flags);
  const url = await edge(() => databaseUrl(flags, paths.home));
  const { exportStore, exportPostgres, sweepSnapshots } = await import("../store/dump.ts");
  const { pidAlive } = await import("../host/lock.ts");
  // What an export killed half-way left behind (its process is gone) goes first.
  sweepSnapshots(paths.home, pidAlive);
  const { version } = JSON.parse(
    readFileSync(new URL("../../package.json", import.meta.url), "utf8"),
  ) as { version: string };
  let manifest;
  let from: string;
  if (url !== null) {
    manifest = await edge(() =>
      exportPostgres({ home: paths.home, databaseUrl: url, dir, holonVersion: version }),
    );
    // A snapshot either way; "online" when a host held the database.
    from = `${await shown(url)}${manifest.taken === "online" ? " (online, from a snapshot)" : ""}`;
  } else {
    manifest = await edge(() =>
      exportStore({
        home: paths.home,
        database: paths.database,
        dir,
        holonVersion: version,
        online,
      }),
    );
    from = `${manifest.holon_home}${online ? " (online, from a snapshot)" : ""}`;
  }
  if (flags.json) return printJson(manifest);
  const rows = manifest.tables.reduce((n, t) => n + t.rows, 0);
  process.stdout.write(
    `exported ${manifest.tables.length} tables (${rows} rows, schema ${manifest.schema_version}) from ${from} to ${dir}\n`,
  );
}

async function importCmd(dir: string, flags: Flags): Promise<void> {
  const { paths } = await target(flags);
  const url = await edge(() => databaseUrl(flags, paths.home));
  const { acquireHomeLock } = await import("../host/lock.ts");
  const { importStore, importPostgres } = await import("../store/dump.ts");
  const result = await edge(async () => {
    const release = acquireHomeLock(paths.lockFile);
    try {
      return url !== null
        ? await importPostgres({ dir, home: paths.home, databaseUrl: url })
        : await importStore({ dir, home: paths.home, database: paths.database });
    } finally {
      release();
    }
  });
  if (flags.json) {
    return printJson({
      home: paths.home,
      schema_version: result.manifest.schema_version,
      tables: result.manifest.tables.length,
      rows: result.rows,
    });
  }
  process.stdout.write(
    `imported ${result.manifest.tables.length} tables (${result.rows} rows, schema ${result.manifest.schema_version}) into ${url !== null ? await shown(url) : paths.database}\n`,
  );
}

async function verifyCmd(dir: string, flags: Flags): Promise<void> {
  const { paths, online } = await target(flags);
  const url = await edge(() => databaseUrl(flags, paths.home));
  const { verifyStore } = await import("../store/dump.ts");
  const result = await edge(() =>
    verifyStore(
      url !== null
        ? { dir, home: paths.home, databaseUrl: url }
        : { dir, home: paths.home, database: paths.database, online },
    ),
  );
  process.exitCode = result.identical ? 0 : 1;
  if (flags.json) return printJson(result);
  if (result.identical) {
    process.stdout.write(`identical: ${result.tables} tables, ${result.rows} rows\n`);
    return;
  }
  const head = { what: "difference", dump: "dump", home: "home" };
  const lines = [head, ...result.differences];
  const w1 = Math.max(...lines.map((l) => l.what.length));
  const w2 = Math.max(...lines.map((l) => l.dump.length));
  process.stdout.write(
    lines.map((l) => `${l.what.padEnd(w1)}  ${l.dump.padEnd(w2)}  ${l.home}`).join("\n") +
      `\n${result.differences.length} difference${result.differences.length === 1 ? "" : "s"}\n`,
  );
}

export function registerStoreCommands(program: Command): void {
  const store = program
    .command("store")
    .description("Dump, restore and compare the home's database (a portable NDJSON dump)");
  store
    .command("export")
    .description(
      "Write the database to a new directory: manifest.json and one <table>.ndjson per table (host stopped or running)",
    )
    .argument("<dir>", "directory to create (or an empty one)")
    .addOption(homeOption())
    .addOption(databaseUrlOption())
    .addOption(jsonOption())
    .action(action(async (dir: string, opts: Flags) => exportCmd(dir, opts)));
  store
    .command("import")
    .description(
      "Restore a dump into a home with no database (or an empty Postgres database), at the same path it was taken from (host stopped)",
    )
    .argument("<dir>", "the directory `holon store export` wrote")
    .addOption(homeOption())
    .addOption(databaseUrlOption())
    .addOption(jsonOption())
    .action(action(async (dir: string, opts: Flags) => importCmd(dir, opts)));
  store
    .command("verify")
    .description(
      "Compare a dump with the home's database: row counts, checksums, newest event_seq per agent, messages in processing (exit 1 when they differ)",
    )
    .argument("<dir>", "the directory `holon store export` wrote")
    .addOption(homeOption())
    .addOption(databaseUrlOption())
    .addOption(jsonOption())
    .action(action(async (dir: string, opts: Flags) => verifyCmd(dir, opts)));
}
