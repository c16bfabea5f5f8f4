// The pieces of the store's transactions that async bodies need (db.ts runs them). One
// SQLite connection means one open transaction at a time: an async transaction holds it
// across its awaits, so everything else must either join it (same async context), wait
// for it (another async transaction), or fail loudly (a synchronous call from elsewhere,
// which would otherwise write into, or read the uncommitted rows of, someone else's
// transaction). The one rule: a transaction body awaits only store calls.
import { HolonError } from "../domain/errors.ts";

/** The open async transaction: the async context its body runs in carries this object. */
export class AsyncTx {
  /** Nested async transactions that joined this one and have not settled yet. */
  joined = 0;
  /** The guard's sentinel fired: the body yielded to timers or I/O before its commit. */
  yielded = false;
}

/** A store call from outside the open async transaction's context (see the header). */
export function txInterleaved(what: string): HolonError {
  return new HolonError(
    "tx_interleaved",
    `${what} ran while an async transaction of another caller was open: it would join that transaction or read its uncommitted rows`,
    {
      status: 500,
      hint: "make this call inside that transaction's body, or after it settles (await it, or use store.afterCommit); a transaction body awaits only store calls",
    },
  );
}

/** An async body started inside a synchronous transaction, which commits before it ends. */
export function txAsyncInSync(): HolonError {
  return new HolonError(
    "tx_interleaved",
    "an async transaction was started inside a synchronous one: the synchronous transaction would commit before the async body ends",
    {
      status: 500,
      hint: "make the outer transaction async (store.txAsync) and await the inner one",
    },
  );
}

/** A synchronous `tx` whose body returned a Promise: it would commit before the body ends. */
export function txPromiseInSync(): HolonError {
  return new HolonError(
    "tx_interleaved",
    "store.tx got a body that returned a Promise: the transaction would commit before the body's awaits",
    { status: 500, hint: "use store.txAsync for an async body" },
  );
}

/** HOLON_TX_GUARD: the body yielded to timers or I/O between BEGIN and COMMIT. */
export function txYielded(): HolonError {
  return new HolonError(
    "tx_yielded",
    "a transaction body yielded to timers or I/O before its commit (it awaited something other than a store call); it was rolled back. The rule: a transaction body awaits only store calls",
    {
      status: 500,
      hint: "do the provider, tool, timer or file work before the transaction or after it commits",
    },
  );
}

/** A nested async transaction the outer body did not await: part of it would run after COMMIT. */
export function txUnawaited(): HolonError {
  return new HolonError(
    "tx_unawaited",
    "an async transaction's body finished while a nested transaction it started was still running (a store promise left un-awaited); it was rolled back",
    { status: 500, hint: "await every store call inside a transaction body" },
  );
}
