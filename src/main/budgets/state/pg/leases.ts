import type { SqlStore } from '../../../storage/sql'
import { NOW_MS } from './sql'

/**
 * Reservation leases (`budget_reservations.expires_at`, on the database's clock): each instance
 * renews those its calls still hold, and any instance frees the expired ones, so a killed
 * instance's reservations, and one no call holds, hold budget for at most one lease.
 */

/**
 * Moves the lease of the reservations `rids` of `instance` (those its calls still hold) to
 * `leaseMs` from now. Not every reservation of the instance: one whose admission answer was lost
 * belongs to no call and must run out.
 */
export async function renewLeases(store: SqlStore, instance: string, leaseMs: number, rids: readonly string[]): Promise<number> {
  if (rids.length === 0) return 0
  return store.run(`UPDATE budget_reservations SET expires_at = ${NOW_MS} + @lease WHERE instance = @me AND id = ANY(@rids::text[])`, {
    lease: leaseMs,
    me: instance,
    rids: [...rids],
  })
}

/** How long a settlement marker still owed to its call is kept when the call never comes. */
export const OWED_KEPT_DAYS = 60

/** Frees the reservations whose lease has run out (their instance stopped renewing). */
export async function sweepExpired(store: SqlStore): Promise<number> {
  // Settlement markers (settlements.ts) guard against a retry, which comes within seconds, and
  // tell a call stored later that its settlement added its cost (call-spend.ts): one still owed
  // to its call is kept until the call is stored (a spill file written at a restart), for up to
  // 60 days: a call never stored (its instance lost it) would keep its marker for ever, and one
  // stored later than that counts in spend rows of periods long over.
  await store.run(`DELETE FROM budget_settled WHERE at < now() - interval '7 days' AND (NOT owed OR at < now() - interval '${OWED_KEPT_DAYS} days')`)
  // The spend rows are locked in id order first, as an admission (admission.ts rowLocks) and a
  // settlement lock them: an UPDATE … FROM reaches them in the table's order, which follows their
  // last writes, so it could hold one row an admission waits for while waiting for another that
  // admission holds, and PostgreSQL aborted one of them (40P01) after its deadlock_timeout.
  return store.run(
    `WITH gone AS (DELETE FROM budget_reservations WHERE expires_at < ${NOW_MS} RETURNING spend_id, amount_usd),
          sums AS (SELECT spend_id, SUM(amount_usd) AS amount FROM gone GROUP BY spend_id),
          locked AS (SELECT id FROM budget_spend WHERE id IN (SELECT spend_id FROM sums) ORDER BY id FOR UPDATE)
     UPDATE budget_spend b SET reserved_usd = GREATEST(0, b.reserved_usd - sums.amount)
       FROM sums WHERE b.id = sums.spend_id AND b.id IN (SELECT id FROM locked)`,
  )
}
