import type Database from 'better-sqlite3'
import type { CallBilling, RepriceResult } from '../../shared/api'
import { type CostChange, RollupAdjuster } from '../dashboard/rollup/adjust'
import type { Ledger } from '../ledger/ledger'
import { emptyUsage } from '../metering/usage'
import type { Pricer } from './price'

interface Row {
  id: number
  ts: number
  api_key_hash: string
  tenant: string
  agent: string
  session: string
  project: string
  billing: CallBilling
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cache_write_1h_tokens: number
  reasoning_tokens: number
  cost_usd: number
  priced: number
}

/** Calls re-priced per transaction; the event loop is given back between chunks. */
const CHUNK = 2_000

/**
 * Prices a model's past calls again with today's prices (a runtime price just set, or newer
 * price data): by default only the calls recorded unpriced, with `all` every call of the model.
 * Each chunk of calls is updated in one transaction with the rollups (./adjust) and today's
 * and this month's spend, so the dashboard and budgets agree with the calls at every commit.
 * Token counts are what the ledger kept; modality splits (image or audio tokens) are not kept,
 * so such calls are priced at the model's token rates.
 */
export async function repriceModel(
  db: Database.Database,
  ledger: Ledger,
  pricer: Pricer,
  pricingId: string,
  provider: string,
  model: string,
  all: boolean,
): Promise<RepriceResult> {
  ledger.flush() // the calls still in memory are in the table first
  const select = db.prepare(`
    SELECT id, ts, api_key_hash, tenant, agent, session, project, billing, input_tokens, output_tokens, cache_read_tokens,
           cache_write_tokens, cache_write_1h_tokens, reasoning_tokens, cost_usd, priced
      FROM calls WHERE provider = @provider AND model = @model AND id > @after
       ${all ? '' : 'AND priced = 0'} AND input_tokens + output_tokens > 0
     ORDER BY id LIMIT ${CHUNK}`)
  const update = db.prepare('UPDATE calls SET cost_usd = ?, priced = ? WHERE id = ?')
  const folded = db.prepare('SELECT last_call_id FROM dash_state WHERE id = 1').pluck()
  const adjuster = new RollupAdjuster(db)
  const out: RepriceResult = { provider, model, repriced: 0, unpriced: 0, cost_usd_before: 0, cost_usd_after: 0 }
  let after = 0
  const chunk = db.transaction((rows: Row[]) => {
    // Calls past the rollups' mark are folded later, with their new cost.
    const last = (folded.get() as number | undefined) ?? 0
    const changes: CostChange[] = []
    const spend: { key: string; ts: number; delta: number }[] = []
    for (const r of rows) {
      const usage = {
        ...emptyUsage(),
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        cache_read_tokens: r.cache_read_tokens,
        cache_write_tokens: r.cache_write_tokens,
        cache_write_1h_tokens: r.cache_write_1h_tokens,
        reasoning_tokens: r.reasoning_tokens,
      }
      const p = pricer.price(pricingId, provider, model, usage, new Date(r.ts))
      if (!p.priced) continue
      if (p.cost_usd === r.cost_usd && r.priced === 1) continue
      update.run(p.cost_usd, 1, r.id)
      out.repriced++
      out.cost_usd_before += r.cost_usd
      out.cost_usd_after += p.cost_usd
      const delta = p.cost_usd - r.cost_usd
      if (r.id <= last) changes.push({ ts: r.ts, provider, model, api_key_hash: r.api_key_hash, tenant: r.tenant, agent: r.agent, session: r.session, project: r.project, billing: r.billing, delta })
      if (r.billing !== 'subscription') spend.push({ key: r.api_key_hash, ts: r.ts, delta })
    }
    adjuster.apply(changes)
    return spend
  })
  for (;;) {
    const rows = select.all({ provider, model, after }) as Row[]
    if (rows.length === 0) break
    after = rows[rows.length - 1].id
    for (const s of chunk(rows)) ledger.spend.adjust(s.key, s.ts, s.delta)
    if (rows.length < CHUNK) break
    await new Promise((r) => setImmediate(r))
  }
  out.unpriced = db
    .prepare('SELECT count(*) FROM calls WHERE provider = ? AND model = ? AND priced = 0 AND input_tokens + output_tokens > 0')
    .pluck()
    .get(provider, model) as number
  return out
}
