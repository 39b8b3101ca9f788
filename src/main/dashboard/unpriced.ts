import type { Unpriced } from '../../shared/api'
import type { DashDeps } from './deps'
import { andTenant, bytewise, indexedBy, total } from './sql'

interface Row {
  provider: string
  model: string
  requests: number
  input_tokens: number
  output_tokens: number
  first_ts: number
  last_ts: number
}

/**
 * Models whose calls were recorded without a price (cost 0, `priced: false`), most calls
 * first, over the whole ledger: the partial index `calls_unpriced` holds only those calls.
 */
export async function unpriced(d: DashDeps, tenant: string | null): Promise<Unpriced> {
  const rows = await d.q.all<Row>(
    `SELECT provider, model, count(*) AS requests, ${total('input_tokens')} AS input_tokens, ${total('output_tokens')} AS output_tokens,
            min(ts) AS first_ts, max(ts) AS last_ts
       FROM calls${indexedBy(d.q, 'calls_unpriced')} WHERE priced = 0${andTenant(tenant)}
      GROUP BY provider, model ORDER BY requests DESC, ${bytewise(d.q, 'provider')}, ${bytewise(d.q, 'model')} LIMIT 200`,
    { tenant },
  )
  return {
    models: rows.map((r) => ({
      provider: r.provider,
      model: r.model,
      requests: r.requests,
      input_tokens: r.input_tokens,
      output_tokens: r.output_tokens,
      first_seen_at: new Date(r.first_ts).toISOString(),
      last_seen_at: new Date(r.last_ts).toISOString(),
    })),
  }
}
