import type Database from 'better-sqlite3'
import { bucketStartSql } from '../sql'
import { TIERS } from './schema'
import type { Dim } from './writer'

// The migrations' one-off passes over the rollups (the writer keeps them in step from then on).

/**
 * Adds the `project` grouping to the rollups for the calls they already include (the writer
 * folds it for every call from then on). One GROUP BY per grain, run once by a migration.
 */
export function backfillProjectRollups(db: Database.Database): void {
  backfillDimRollups(db, 'project', 'project')
}

/** Adds one grouping (`dim`, read from the calls' `column`) to the rollups for the calls they already include. */
export function backfillDimRollups(db: Database.Database, dim: Dim, column: string): void {
  for (const t of TIERS) {
    db.prepare(`DELETE FROM ${t.dims} WHERE dim = '${dim}'`).run()
    db.prepare(`
      INSERT INTO ${t.dims} (dim, bucket, tenant, key, provider, key_hint, requests, input_tokens, output_tokens,
                             cache_read_tokens, cache_write_tokens, cost_usd)
      SELECT '${dim}', ${bucketStartSql('ts', t.grain)}, tenant, ${column}, '', '', count(*), sum(input_tokens),
             sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
             total(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END)
        FROM calls WHERE id <= (SELECT last_call_id FROM dash_state WHERE id = 1)
       GROUP BY 2, 3, 4`).run()
  }
}

/**
 * Repairs the `project` and `member` groupings of a ledger upgraded through versions 8 and 10
 * while it held plan usage: those backfills summed a subscription call's API-equivalent value as
 * money (fixed since), so a bucket's grouping rows add up to more than its totals' money, which
 * the writer always kept right. Only such buckets are touched (found from the rollups alone):
 * - a bucket whose calls are all kept is summed again from them, money only, as the writer sums;
 * - a bucket retention has pruned in part, with one row for the grouping (one project or one
 *   member: nearly every ledger), takes its totals' money;
 * - any other (several rows, their calls partly pruned) cannot be split again and is left.
 * Returns how many buckets it repaired.
 */
export function repairDimMoney(db: Database.Database): number {
  const lastId = (db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck().get() as number | undefined) ?? 0
  // Calls before this instant may be gone (retention, since version 12): a bucket from it on has them all.
  const pruned = (db.prepare('SELECT pruned_before FROM retention_state WHERE id = 1').pluck().get() as number | undefined) ?? 0
  let repaired = 0
  for (const t of TIERS) {
    for (const dim of ['project', 'member'] as const) {
      const wrong = db
        .prepare(
          `SELECT d.bucket AS bucket, d.tenant AS tenant, total(d.cost_usd) AS dims, count(*) AS n,
                  (SELECT cost_usd FROM ${t.totals} x WHERE x.bucket = d.bucket AND x.tenant = d.tenant) AS money
             FROM ${t.dims} d WHERE d.dim = ? GROUP BY d.bucket, d.tenant`,
        )
        .all(dim) as { bucket: number; tenant: string; dims: number; n: number; money: number | null }[]
      for (const w of wrong) {
        const money = w.money ?? 0
        // Sums of the same costs in another order differ in their last bits, never by a cent's billionth.
        if (!(w.dims - money > 1e-9 * Math.max(1, Math.abs(money)))) continue
        if (w.bucket >= pruned) {
          db.prepare(`DELETE FROM ${t.dims} WHERE dim = ? AND bucket = ? AND tenant = ?`).run(dim, w.bucket, w.tenant)
          db.prepare(`
            INSERT INTO ${t.dims} (dim, bucket, tenant, key, provider, key_hint, requests, input_tokens, output_tokens,
                                   cache_read_tokens, cache_write_tokens, cost_usd)
            SELECT ?, ?, tenant, ${dim}, '', '', count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens),
                   sum(cache_write_tokens), total(CASE WHEN billing = 'subscription' THEN 0 ELSE cost_usd END)
              FROM calls WHERE ts >= ? AND ts < ? AND tenant = ? AND id <= ?
             GROUP BY ${dim}`).run(dim, w.bucket, w.bucket, w.bucket + t.grain, w.tenant, lastId)
        } else if (w.n === 1) {
          db.prepare(`UPDATE ${t.dims} SET cost_usd = ? WHERE dim = ? AND bucket = ? AND tenant = ?`).run(money, dim, w.bucket, w.tenant)
        } else continue
        repaired++
      }
    }
  }
  return repaired
}
