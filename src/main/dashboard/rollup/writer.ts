import type Database from 'better-sqlite3'
import type { CallRecord } from '../../ledger/record'
import { BINS, binOf, decodeInto, encodeDense } from '../histogram'
import { reportZone } from './report'
import { ReportFolder } from './report-folder'
import { FIVE_MIN, TIERS } from './schema'

/** Scratch space for merging a stored histogram with a batch's (the writer is synchronous). */
const dense = new Float64Array(BINS)

/** The columns of a call the rollups read (a `CallRecord`, or a `calls` row). */
export type RollupInput = Pick<
  CallRecord,
  | 'ts' | 'provider' | 'model' | 'api_key_hash' | 'key_hint' | 'tenant' | 'agent' | 'session' | 'status'
  | 'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_write_tokens' | 'cost_usd' | 'latency_ms' | 'billing' | 'project'
  | 'member' | 'source'
>

/**
 * What a call adds to the rollups' money (`cost_usd`) and to the API-equivalent value of plan
 * usage (`plan_value_usd`): a subscription call costs no money per token, so its API-equivalent
 * cost is kept apart from spend.
 */
export function moneyOf(r: Pick<RollupInput, 'cost_usd' | 'billing'>): number {
  return r.billing === 'subscription' ? 0 : r.cost_usd
}
export function planValueOf(r: Pick<RollupInput, 'cost_usd' | 'billing'>): number {
  return r.billing === 'subscription' ? r.cost_usd : 0
}

/** Whether `table` has `column` (the writer also runs in migration 2, before later columns exist). */
export function hasColumn(db: Database.Database, table: string, column: string): boolean {
  return (db.prepare(`SELECT count(*) FROM pragma_table_info(?) WHERE name = ?`).pluck().get(table, column) as number) > 0
}

/** The groupings of `dash_dim` (the tenant grouping reads `dash_hour`). */
export const DIMS = ['model', 'provider', 'agent', 'session', 'api_key', 'project', 'member'] as const
export type Dim = (typeof DIMS)[number]

interface Five {
  bucket: number
  tenant: string
  requests: number
  cost: number
  input: number
  output: number
}
interface Totals {
  tier: number
  bucket: number
  tenant: string
  requests: number
  failed: number
  e429: number
  e5xx: number
  cost: number
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  latency: number
  plan: number
  hist: Map<number, number>
}
interface DimRow {
  tier: number
  dim: Dim
  bucket: number
  tenant: string
  key: string
  provider: string
  hint: string
  requests: number
  input: number
  output: number
  cacheRead: number
  cacheWrite: number
  cost: number
}
interface Sess {
  tenant: string
  agent: string
  session: string
  first: number
  last: number
  requests: number
  cost: number
}

/** A call counts as failed when its status is an HTTP error (4xx, 5xx, and 499 for client aborts). */
export function isFailed(status: number): boolean {
  return status >= 400
}

/**
 * Folds calls into the rollup tables: aggregates a batch in memory, then one upsert per
 * touched row. Runs inside the ledger's batch transaction, so rollups and calls commit together.
 */
export class RollupWriter {
  private readonly up5: Database.Statement
  private readonly tiers: { getHist: Database.Statement; upTotals: Database.Statement; upDim: Database.Statement }[]
  private readonly upSession: Database.Statement
  private readonly setLast: Database.Statement
  private readonly getLast: Database.Statement
  private readonly chunk: Database.Statement
  /** The report rollup's writer, once the rollup is built for a zone (see report.ts). */
  private readonly report: ReportFolder | null

  /** Whether the schema has the plan-value columns (migration 6) and `calls.billing` (migration 3). */
  private readonly withPlan: boolean

  constructor(private readonly db: Database.Database) {
    this.withPlan = hasColumn(db, 'dash_hour', 'plan_value_usd') && hasColumn(db, 'calls', 'billing')
    const plan = this.withPlan
    this.up5 = db.prepare(`
      INSERT INTO dash_5m (bucket, tenant, requests, cost_usd, input_tokens, output_tokens)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (bucket, tenant) DO UPDATE SET
        requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd,
        input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens`)
    this.tiers = TIERS.map((t) => ({
      getHist: db.prepare(`SELECT latency_hist FROM ${t.totals} WHERE bucket = ? AND tenant = ?`).pluck(),
      upTotals: db.prepare(`
        INSERT INTO ${t.totals} (bucket, tenant, requests, failed, errors_429, errors_5xx, cost_usd, input_tokens,
                               output_tokens, cache_read_tokens, cache_write_tokens, latency_ms, latency_hist${plan ? ', plan_value_usd' : ''})
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?${plan ? ', ?' : ''})
        ON CONFLICT (bucket, tenant) DO UPDATE SET
          requests = requests + excluded.requests, failed = failed + excluded.failed,
          errors_429 = errors_429 + excluded.errors_429, errors_5xx = errors_5xx + excluded.errors_5xx,
          cost_usd = cost_usd + excluded.cost_usd, input_tokens = input_tokens + excluded.input_tokens,
          output_tokens = output_tokens + excluded.output_tokens,
          cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
          cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
          latency_ms = latency_ms + excluded.latency_ms, latency_hist = excluded.latency_hist${
            plan ? ', plan_value_usd = plan_value_usd + excluded.plan_value_usd' : ''
          }`),
      upDim: db.prepare(`
        INSERT INTO ${t.dims} (dim, bucket, tenant, key, provider, key_hint, requests, input_tokens, output_tokens,
                              cache_read_tokens, cache_write_tokens, cost_usd)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (dim, bucket, tenant, key, provider) DO UPDATE SET
          key_hint = excluded.key_hint, requests = requests + excluded.requests,
          input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
          cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
          cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, cost_usd = cost_usd + excluded.cost_usd`),
    }))
    this.upSession = db.prepare(`
      INSERT INTO dash_session (tenant, agent, session, first_ts, last_ts, requests, cost_usd)
      VALUES (?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (tenant, agent, session) DO UPDATE SET
        first_ts = min(first_ts, excluded.first_ts), last_ts = max(last_ts, excluded.last_ts),
        requests = requests + excluded.requests, cost_usd = cost_usd + excluded.cost_usd`)
    this.setLast = db.prepare('UPDATE dash_state SET last_call_id = (SELECT coalesce(max(id), 0) FROM calls) WHERE id = 1')
    this.getLast = db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck()
    // (Migration 2 folds calls before migration 3 gave them a project.)
    // (and migration 10 gave them a member): a column not there yet reads as its default.
    const cols = new Set((db.pragma('table_info(calls)') as { name: string }[]).map((c) => c.name))
    const project = [
      cols.has('project') ? 'project' : "'' AS project",
      cols.has('source') ? 'source' : "'proxy' AS source",
      cols.has('member') ? 'member' : "'' AS member",
    ].join(', ')
    this.chunk = db.prepare(`
      SELECT id, ts, provider, model, api_key_hash, key_hint, tenant, agent, session, status, input_tokens,
             output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, latency_ms${plan ? ', billing' : ''}, ${project}
        FROM calls WHERE id > ?${cols.has('superseded_by') ? ' AND superseded_by IS NULL' : ''} ORDER BY id LIMIT ?`)
    const tz = reportZone(db)
    this.report = tz === null ? null : new ReportFolder(db, tz)
  }

  /** The ledger's batch hook: the batch's rows are already inserted in this transaction. */
  onBatch(rows: readonly RollupInput[]): void {
    this.fold(rows)
    this.setLast.run()
  }

  /**
   * Folds every call the rollups do not include yet (after a server ran without this writer,
   * or the first time, over an existing ledger). Returns how many calls it folded.
   */
  catchUp(chunkSize = 50_000): number {
    return this.db.transaction(() => {
      let last = (this.getLast.get() as number | undefined) ?? 0
      let n = 0
      for (;;) {
        const rows = this.chunk.all(last, chunkSize) as (RollupInput & { id: number })[]
        if (rows.length === 0) break
        this.fold(rows)
        last = rows[rows.length - 1].id
        n += rows.length
      }
      this.setLast.run()
      return n
    })()
  }

  private fold(rows: readonly RollupInput[]): void {
    this.report?.fold(rows)
    const fives = new Map<string, Five>()
    const totals = new Map<string, Totals>()
    const dims = new Map<string, DimRow>()
    const sessions = new Map<string, Sess>()
    // Consecutive calls of one caller (same tenant, model, provider, agent, session and key) in
    // one 5-minute bucket (so in the same hour and day too) land on the same aggregates as the
    // call before them: those are reused instead of being looked up again by their string keys.
    const hs: Totals[] = new Array(TIERS.length)
    const ds: DimRow[] = new Array(TIERS.length * DIMS.length)
    let prev: RollupInput | null = null
    let prevBucket = 0
    let f: Five | undefined
    for (const r of rows) {
      const money = moneyOf(r)
      const plan = planValueOf(r)
      const bucket = Math.floor(r.ts / FIVE_MIN) * FIVE_MIN
      const same =
        prev !== null &&
        bucket === prevBucket &&
        r.tenant === prev.tenant &&
        r.model === prev.model &&
        r.provider === prev.provider &&
        r.agent === prev.agent &&
        r.session === prev.session &&
        r.api_key_hash === prev.api_key_hash &&
        r.project === prev.project &&
        r.member === prev.member
      if (!same) {
        const fk = bucket + '\0' + r.tenant
        f = fives.get(fk)
        if (!f) fives.set(fk, (f = { bucket, tenant: r.tenant, requests: 0, cost: 0, input: 0, output: 0 }))
      }
      f!.requests++
      f!.cost += money
      f!.input += r.input_tokens
      f!.output += r.output_tokens

      const bin = binOf(r.latency_ms)
      for (let tier = 0; tier < TIERS.length; tier++) {
        let h: Totals
        if (same) {
          h = hs[tier]
        } else {
          const b = Math.floor(r.ts / TIERS[tier].grain) * TIERS[tier].grain
          const hk = tier + '\0' + b + '\0' + r.tenant
          let found = totals.get(hk)
          if (!found) {
            totals.set(
              hk,
              (found = {
                tier, bucket: b, tenant: r.tenant, requests: 0, failed: 0, e429: 0, e5xx: 0, cost: 0, input: 0, output: 0,
                cacheRead: 0, cacheWrite: 0, latency: 0, plan: 0, hist: new Map(),
              }),
            )
          }
          h = hs[tier] = found
        }
        h.requests++
        if (isFailed(r.status)) h.failed++
        if (r.status === 429) h.e429++
        if (r.status >= 500 && r.status <= 599) h.e5xx++
        h.cost += money
        h.plan += plan
        h.input += r.input_tokens
        h.output += r.output_tokens
        h.cacheRead += r.cache_read_tokens
        h.cacheWrite += r.cache_write_tokens
        h.latency += r.latency_ms
        // A call recorded without a latency (0: imported, a batch's request) is in no latency figure.
        if (r.latency_ms > 0) h.hist.set(bin, (h.hist.get(bin) ?? 0) + 1)

        const at = tier * DIMS.length
        if (!same) {
          const b = h.bucket
          ds[at] = dimRow(dims, tier, 'model', b, r, r.model, r.provider, '')
          ds[at + 1] = dimRow(dims, tier, 'provider', b, r, r.provider, '', '')
          ds[at + 2] = dimRow(dims, tier, 'agent', b, r, r.agent, '', '')
          ds[at + 3] = dimRow(dims, tier, 'session', b, r, r.session, '', '')
          ds[at + 4] = dimRow(dims, tier, 'api_key', b, r, r.api_key_hash, '', r.key_hint)
          ds[at + 5] = dimRow(dims, tier, 'project', b, r, r.project ?? '', '', '')
          ds[at + 6] = dimRow(dims, tier, 'member', b, r, r.member ?? '', '', '')
        }
        for (let k = at; k < at + DIMS.length; k++) {
          const d = ds[k]
          d.requests++
          d.input += r.input_tokens
          d.output += r.output_tokens
          d.cacheRead += r.cache_read_tokens
          d.cacheWrite += r.cache_write_tokens
          d.cost += money
        }
      }
      prev = r
      prevBucket = bucket

      if (r.session !== '') {
        const sk = r.tenant + '\0' + r.agent + '\0' + r.session
        const s = sessions.get(sk)
        if (!s) {
          sessions.set(sk, { tenant: r.tenant, agent: r.agent, session: r.session, first: r.ts, last: r.ts, requests: 1, cost: money })
        } else {
          if (r.ts < s.first) s.first = r.ts
          if (r.ts > s.last) s.last = r.ts
          s.requests++
          s.cost += money
        }
      }
    }
    for (const f of fives.values()) this.up5.run(f.bucket, f.tenant, f.requests, f.cost, f.input, f.output)
    for (const h of totals.values()) {
      const st = this.tiers[h.tier]
      dense.fill(0)
      decodeInto((st.getHist.get(h.bucket, h.tenant) as Buffer | undefined) ?? null, dense)
      for (const [b, n] of h.hist) dense[b] += n
      const values = [
        h.bucket, h.tenant, h.requests, h.failed, h.e429, h.e5xx, h.cost, h.input, h.output, h.cacheRead,
        h.cacheWrite, h.latency, encodeDense(dense),
      ]
      if (this.withPlan) values.push(h.plan)
      st.upTotals.run(values)
    }
    for (const d of dims.values()) {
      this.tiers[d.tier].upDim.run(
        d.dim, d.bucket, d.tenant, d.key, d.provider, d.hint, d.requests, d.input, d.output, d.cacheRead, d.cacheWrite, d.cost,
      )
    }
    for (const s of sessions.values()) this.upSession.run(s.tenant, s.agent, s.session, s.first, s.last, s.requests, s.cost)
  }
}

/** The aggregate of one grouping's row, created empty the first time it is met in a batch. */
function dimRow(
  dims: Map<string, DimRow>, tier: number, dim: Dim, bucket: number, r: RollupInput, key: string, provider: string, hint: string,
): DimRow {
  const k = tier + '\0' + dim + '\0' + bucket + '\0' + r.tenant + '\0' + key + '\0' + provider
  let d = dims.get(k)
  if (!d) {
    dims.set(
      k,
      (d = { tier, dim, bucket, tenant: r.tenant, key, provider, hint, requests: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 }),
    )
  }
  return d
}
