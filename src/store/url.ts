// A database URL in printable form. Its own small module: the store's Postgres connection
// names its server in errors with it, and configuration output masks the setting with it,
// without either loading the other.

const MASK = "***";

/**
 * A printable form of a database URL: the password (in the user part or in any parameter
 * whose name mentions a password) replaced by `***`, everything else as written. A value
 * that does not parse is not shown at all.
 */
export function maskDatabaseUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "configured (not a valid URL)";
  }
  if (u.password) u.password = MASK;
  u.search = u.search.replace(/([?&][^=&#]*password[^=&#]*=)[^&#]*/gi, `$1${MASK}`);
  u.hash = "";
  return u.toString();
}
