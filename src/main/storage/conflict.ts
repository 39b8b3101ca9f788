/**
 * Transactions that lost to another's on PostgreSQL: a serialization failure (40001) or a
 * deadlock PostgreSQL broke by aborting this one (40P01). The transaction was rolled back whole
 * and can run again at once: the database is not away. Instances writing the same rows (calls,
 * rollups, shared spend rows) in one database meet this under load.
 */
export function isConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '40001' || code === '40P01'
}

/** How many times in all a transaction that keeps losing is run before its error is let through. */
export const CONFLICT_ATTEMPTS = 5

/**
 * Runs `transaction` (one whole transaction, nothing it changed kept outside it until it
 * resolves) again while it loses to another's (`isConflict`), at most `attempts` times in all;
 * any other error, or the last conflict, is thrown.
 */
export async function retryOnConflict<T>(transaction: () => Promise<T>, attempts = CONFLICT_ATTEMPTS): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction()
    } catch (err) {
      if (attempt >= attempts || !isConflict(err)) throw err
    }
  }
}
