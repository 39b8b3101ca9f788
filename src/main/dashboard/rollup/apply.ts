import type { Totals } from '../totals'
import type { CallRecord } from '../../ledger/record'
import type { SqlParams, SqlStore } from '../../storage/sql'
import { BINS, binOf, decodeInto, encodeDense } from '../histogram'
import { FIVE_MIN, TIERS } from './schema'
import { DIMS, type Dim, isFailed, moneyOf, planValueOf } from './writer'

/**
 * The rollups of a batch of calls through the SQL seam, for PostgreSQL, where several Burnrate
 * instances write one database (SQLite keeps its synchronous `RollupWriter` on the write thread).
 * Runs in the caller's transaction, the one that inserts the batch's calls, so the two commit
 * together. Safe when other instances apply batches to the same rollup rows at once:
 * - every total is added in SQL (`col = table.col + excluded.col`), never read and written back;
 * - a latency histogram cannot be added in SQL, so its row is created if missing and then
 *   locked (`SELECT … FOR UPDATE`) before the merged histogram is written;
 * - rows are touched in one order (table by table, keys sorted), the same in every instance, so
 *   two batches never wait on each other in a cycle (no deadlock).
 */
export async function applyRollups(tx: SqlStore, rows: readonly (CallRecord & { id: number })[]): Promise<void> {
  if (rows.length === 0) return
  const a = aggregate(rows)
  // The rows every instance's batch touches (this 5 minutes', hour's and day's totals) last, so
  // they stay locked for the shortest time: from here to the commit.
  for (let tier = 0; tier < TIERS.length; tier++) {
    await upsertMany(tx, dimSql(TIERS[tier].dims), DIM_COLS, sorted(a.dims[tier]))
  }
  await upsertMany(tx, SESSION_SQL, SESSION_COLS, sorted(a.sessions))
  await upsertMany(tx, FIVE_SQL, FIVE_COLS, sorted(a.fives))
  for (let tier = 0; tier < TIERS.length; tier++) {
    for (const h of sorted(a.totals[tier])) await addTotals(tx, TIERS[tier].totals, h)
  }
}

interface FiveRow {
  bucket: number
  tenant: string
  requests: number
  cost_usd: number
  input_tokens: number
  output_tokens: number
}
/** A totals rollup row: the dashboard's totals of one bucket and tenant, with its latency histogram. */
interface TotalsRow extends Totals {
  bucket: number
  tenant: string
  hist: Map<number, number>
}
interface DimRow {
  dim: Dim
  bucket: number
  tenant: string
  key: string
  provider: string
  key_hint: string
  requests: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
}
interface SessionRow {
  tenant: string
  agent: string
  session: string
  first_ts: number
  last_ts: number
  requests: number
  cost_usd: number
}

/** A batch summed per rollup row, as the SQLite writer sums it (the first key hint of a batch wins within it). */
function aggregate(rows: readonly CallRecord[]) {
  const fives = new Map<string, FiveRow>()
  const totals = TIERS.map(() => new Map<string, TotalsRow>())
  const dims = TIERS.map(() => new Map<string, DimRow>())
  const sessions = new Map<string, SessionRow>()
  for (const r of rows) {
    const money = moneyOf(r)
    const b5 = Math.floor(r.ts / FIVE_MIN) * FIVE_MIN
    const fk = key(b5, r.tenant)
    let f = fives.get(fk)
    if (!f) fives.set(fk, (f = { bucket: b5, tenant: r.tenant, requests: 0, cost_usd: 0, input_tokens: 0, output_tokens: 0 }))
    f.requests++
    f.cost_usd += money
    f.input_tokens += r.input_tokens
    f.output_tokens += r.output_tokens

    const bin = binOf(r.latency_ms)
    TIERS.forEach((t, tier) => {
      const bucket = Math.floor(r.ts / t.grain) * t.grain
      const hk = key(bucket, r.tenant)
      let h = totals[tier].get(hk)
      if (!h) {
        h = {
          bucket, tenant: r.tenant, requests: 0, failed: 0, errors_429: 0, errors_5xx: 0, cost_usd: 0, input_tokens: 0,
          output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0, latency_ms: 0, plan_value_usd: 0, hist: new Map(),
        }
        totals[tier].set(hk, h)
      }
      h.requests++
      if (isFailed(r.status)) h.failed++
      if (r.status === 429) h.errors_429++
      if (r.status >= 500 && r.status <= 599) h.errors_5xx++
      h.cost_usd += money
      h.plan_value_usd += planValueOf(r)
      h.input_tokens += r.input_tokens
      h.output_tokens += r.output_tokens
      h.cache_read_tokens += r.cache_read_tokens
      h.cache_write_tokens += r.cache_write_tokens
      h.latency_ms += r.latency_ms
      // A call recorded without a latency (0: imported, a batch's request) is in no latency figure (writer.ts).
      if (r.latency_ms > 0) h.hist.set(bin, (h.hist.get(bin) ?? 0) + 1)

      const groups: Record<Dim, [string, string, string]> = {
        model: [r.model, r.provider, ''],
        provider: [r.provider, '', ''],
        agent: [r.agent, '', ''],
        session: [r.session, '', ''],
        api_key: [r.api_key_hash, '', r.key_hint],
        project: [r.project ?? '', '', ''],
        member: [r.member ?? '', '', ''],
      }
      for (const dim of DIMS) {
        const [k, provider, hint] = groups[dim]
        const dk = key(dim, bucket, r.tenant, k, provider)
        let d = dims[tier].get(dk)
        if (!d) {
          d = {
            dim, bucket, tenant: r.tenant, key: k, provider, key_hint: hint, requests: 0, input_tokens: 0, output_tokens: 0,
            cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: 0,
          }
          dims[tier].set(dk, d)
        }
        d.requests++
        d.input_tokens += r.input_tokens
        d.output_tokens += r.output_tokens
        d.cache_read_tokens += r.cache_read_tokens
        d.cache_write_tokens += r.cache_write_tokens
        d.cost_usd += money
      }
    })

    if (r.session !== '') {
      const sk = key(r.tenant, r.agent, r.session)
      const s = sessions.get(sk)
      if (!s) {
        sessions.set(sk, { tenant: r.tenant, agent: r.agent, session: r.session, first_ts: r.ts, last_ts: r.ts, requests: 1, cost_usd: money })
      } else {
        if (r.ts < s.first_ts) s.first_ts = r.ts
        if (r.ts > s.last_ts) s.last_ts = r.ts
        s.requests++
        s.cost_usd += money
      }
    }
  }
  return { fives, totals, dims, sessions }
}

/** A row's identity: numbers zero-padded, so the string order is the same in every instance and stable. */
function key(...parts: (string | number)[]): string {
  return parts.map((p) => (typeof p === 'number' ? String(p).padStart(16, '0') : p)).join('\0')
}

function sorted<T>(m: Map<string, T>): T[] {
  return [...m.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).map((k) => m.get(k)!)
}

const FIVE_COLS = ['bucket', 'tenant', 'requests', 'cost_usd', 'input_tokens', 'output_tokens'] as const
const FIVE_SQL = {
  head: `INSERT INTO dash_5m (${FIVE_COLS.join(', ')}) VALUES `,
  tail: ` ON CONFLICT (bucket, tenant) DO UPDATE SET
    requests = dash_5m.requests + excluded.requests, cost_usd = dash_5m.cost_usd + excluded.cost_usd,
    input_tokens = dash_5m.input_tokens + excluded.input_tokens, output_tokens = dash_5m.output_tokens + excluded.output_tokens`,
}

const DIM_COLS = [
  'dim', 'bucket', 'tenant', 'key', 'provider', 'key_hint', 'requests', 'input_tokens', 'output_tokens',
  'cache_read_tokens', 'cache_write_tokens', 'cost_usd',
] as const
function dimSql(t: string) {
  return {
    head: `INSERT INTO ${t} (${DIM_COLS.join(', ')}) VALUES `,
    tail: ` ON CONFLICT (dim, bucket, tenant, key, provider) DO UPDATE SET
      key_hint = excluded.key_hint, requests = ${t}.requests + excluded.requests,
      input_tokens = ${t}.input_tokens + excluded.input_tokens, output_tokens = ${t}.output_tokens + excluded.output_tokens,
      cache_read_tokens = ${t}.cache_read_tokens + excluded.cache_read_tokens,
      cache_write_tokens = ${t}.cache_write_tokens + excluded.cache_write_tokens, cost_usd = ${t}.cost_usd + excluded.cost_usd`,
  }
}

const SESSION_COLS = ['tenant', 'agent', 'session', 'first_ts', 'last_ts', 'requests', 'cost_usd'] as const
const SESSION_SQL = {
  head: `INSERT INTO dash_session (${SESSION_COLS.join(', ')}) VALUES `,
  tail: ` ON CONFLICT (tenant, agent, session) DO UPDATE SET
    first_ts = CASE WHEN excluded.first_ts < dash_session.first_ts THEN excluded.first_ts ELSE dash_session.first_ts END,
    last_ts = CASE WHEN excluded.last_ts > dash_session.last_ts THEN excluded.last_ts ELSE dash_session.last_ts END,
    requests = dash_session.requests + excluded.requests, cost_usd = dash_session.cost_usd + excluded.cost_usd`,
}

/**
 * Rows per multi-row upsert: a batch goes in the fewest statements of these sizes, so each
 * table has a handful of statement texts (each prepared once) whatever the batch size.
 */
const CHUNKS = [256, 64, 16, 4, 1]

async function upsertMany<C extends string>(
  tx: SqlStore,
  sql: { head: string; tail: string },
  cols: readonly C[],
  rows: readonly Record<C, unknown>[],
): Promise<void> {
  let at = 0
  for (const size of CHUNKS) {
    while (rows.length - at >= size) {
      const params: SqlParams = {}
      const tuples: string[] = []
      for (let i = 0; i < size; i++) {
        const r = rows[at + i]
        tuples.push(`(${cols.map((c) => `@${c}_${i}`).join(', ')})`)
        for (const c of cols) params[`${c}_${i}`] = r[c]
      }
      await tx.run(sql.head + tuples.join(', ') + sql.tail, params)
      at += size
    }
  }
}

/** Scratch space for merging a stored histogram with a batch's. */
const dense = new Float64Array(BINS)

/** Adds a batch's totals to one row, merging the latency histogram under the row's lock. */
async function addTotals(tx: SqlStore, table: string, h: TotalsRow): Promise<void> {
  const at = { bucket: h.bucket, tenant: h.tenant }
  await tx.run(
    `INSERT INTO ${table} (bucket, tenant, requests, failed, errors_429, errors_5xx, cost_usd, input_tokens, output_tokens,
                           cache_read_tokens, cache_write_tokens, latency_ms, latency_hist, plan_value_usd)
     VALUES (@bucket, @tenant, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, @empty, 0) ON CONFLICT (bucket, tenant) DO NOTHING`,
    { ...at, empty: Buffer.alloc(0) },
  )
  const lock = tx.dialect === 'postgres' ? ' FOR UPDATE' : '' // (a SQLite transaction already holds the only write lock)
  const stored = await tx.get<{ latency_hist: Buffer | null }>(
    `SELECT latency_hist FROM ${table} WHERE bucket = @bucket AND tenant = @tenant${lock}`,
    at,
  )
  // Merged here, between the awaits nothing else runs on this scratch array.
  dense.fill(0)
  decodeInto(stored?.latency_hist ?? null, dense)
  for (const [b, n] of h.hist) dense[b] += n
  const hist = encodeDense(dense)
  await tx.run(
    `UPDATE ${table} SET requests = requests + @requests, failed = failed + @failed, errors_429 = errors_429 + @errors_429,
       errors_5xx = errors_5xx + @errors_5xx, cost_usd = cost_usd + @cost_usd, input_tokens = input_tokens + @input_tokens,
       output_tokens = output_tokens + @output_tokens, cache_read_tokens = cache_read_tokens + @cache_read_tokens,
       cache_write_tokens = cache_write_tokens + @cache_write_tokens, latency_ms = latency_ms + @latency_ms,
       plan_value_usd = plan_value_usd + @plan_value_usd, latency_hist = @hist
     WHERE bucket = @bucket AND tenant = @tenant`,
    { ...h, hist },
  )
}
