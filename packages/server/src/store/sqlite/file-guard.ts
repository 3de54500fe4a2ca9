import { type Stats, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Store, StoreUnavailableError, SUBSCRIPTIONS } from '../store.js';

/**
 * Store calls that only read (and `close`). An unlinked database file still answers them, consistently, from the data it held;
 * and the /dlr path (getAccountByKey, findDlr) must not pay a system call per request. Every other call — the
 * writes, `ping` (readiness) and any call added later — is checked.
 */
export const READ_ONLY: ReadonlySet<string> = new Set<keyof Store>([
  'close',
  'hasAccounts',
  'getAccount',
  'getAccountByKey',
  'getCallbackSecrets',
  'pepperFingerprint',
  'sealedCallbackSecret',
  'findDlr',
  'findDlrNow',
  'findMessagesByIds',
  'resolveContact',
  'listHistory',
  'listReceiptEvents',
  'listStoredReceiptEvents',
  'nextDeliveryDue',
  'listDeliveries',
  'getDelivery',
  'outboxStats',
]);

/**
 * The store, refusing to write once its database file was deleted or replaced while it runs (`rm -r data/`, a
 * restore copied over it). SQLite keeps writing into the file it opened, unlinked or not, and acknowledges every
 * write: all of it would be gone at the next start. Before each write, and on every readiness check, the path is
 * compared (stat: device and inode) with the file opened; on a difference the call fails with a
 * StoreUnavailableError naming the path, so the API answers 503 and /readyz 503. The connection cannot be moved
 * to a new file under it, so this lasts until the process is restarted. A stat costs about a microsecond, well
 * under what the cheapest write costs (docs/operations.md).
 *
 * `opened` is the file as it was right after the store opened it.
 */
export function guardingFile(store: Store, path: string, opened: Stats): Store {
  const file = resolve(path);
  let lost: string | null = null;
  const check = () => {
    if (lost === null) {
      const now = statSync(file, { throwIfNoEntry: false });
      if (now === undefined) lost = 'was deleted';
      else if (now.ino !== opened.ino || now.dev !== opened.dev) lost = 'was replaced by another file';
    }
    if (lost !== null) {
      throw new StoreUnavailableError(
        `the SQLite database file ${file} ${lost} while the server ran, so nothing more is written to the old one: restore it and restart waybill serve`,
      );
    }
  };
  const guarded: Record<string, unknown> = { ...store };
  for (const [name, value] of Object.entries(store)) {
    if (typeof value !== 'function' || READ_ONLY.has(name) || SUBSCRIPTIONS.has(name)) continue;
    guarded[name] = async (...args: unknown[]) => {
      check();
      return (value as (...a: unknown[]) => unknown).apply(store, args);
    };
  }
  return guarded as unknown as Store;
}
