import type { RepriceResult } from '../../shared/api'
import type { CallLedger as Ledger } from '../ledger/types'
import { emptyUsage, hasBilledUnits, type Usage } from '../metering/usage'
import { withUsageExtra } from '../metering/usage-extra'
import { retryOnConflict } from '../storage/conflict'
import type { SqlStore } from '../storage/sql'
import { CostMoves, type MovedCall, type SpendTargets } from './moves'
import type { Pricer } from './price'

/** A call as re-pricing reads it: what it is counted by (its provider and model are those being re-priced), its usage and cost. */
interface Row extends Omit<MovedCall, 'provider' | 'model'> {
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cache_write_1h_tokens: number
  reasoning_tokens: number
  /** What the call was billed for beyond its token columns (JSON), or null (ledger/record.ts). */
  usage_extra: string | null
  cost_usd: number
  priced: number
  /** The call's own model, read only for the calls the model being re-priced advised (`advisedSelect`). */
  model?: string
}

/** Calls that may cost something: tokens, or what `usage_extra` kept (whisper's audio seconds have no tokens). */
const BILLABLE = '(input_tokens + output_tokens > 0 OR usage_extra IS NOT NULL)'

/** What a call recorded unpriced and priced now has changed (the metrics count it: ./moves.ts `CallMarks`). */
const PRICED = { priced: true } as const

/** Calls re-priced per transaction; the event loop is given back between chunks. */
const CHUNK = 2_000

/**
 * Prices a model's past calls again with today's prices (a runtime price just set, or newer
 * price data): by default only the calls recorded unpriced, with `all` every call of the model.
 * Each chunk of calls is updated in one transaction with the rollups (../dashboard/rollup/adjust),
 * then today's and this month's spend and the budget rules' meters, so the dashboard and budgets
 * agree with the calls at every commit.
 * A call is priced from its token columns and what `usage_extra` kept (searches billed per use,
 * modality splits, whisper's audio seconds), as it was when recorded; a call whose cost was the
 * provider's own reported charge (OpenRouter, Perplexity) keeps that charge. Calls recorded
 * before `usage_extra` was kept have only their token columns. The calls of other models that the
 * model advised (Claude's advisor tool: `usage_extra`'s `advisor` names it) are re-priced too, each
 * at its own model with its advisor's part at the advisor's price (./advisor.ts): part of their cost
 * is the model's price.
 */
export async function repriceModel(
  store: SqlStore,
  ledger: Pick<Ledger, 'flushed' | 'spend'>,
  pricer: Pricer,
  pricingId: string,
  provider: string,
  model: string,
  all: boolean,
  /** The budget rules' meters, moved with each chunk once it is committed; PostgreSQL's shared spend rows, in each chunk's transaction. */
  budgets: SpendTargets = {},
): Promise<RepriceResult> {
  await pricer.ready()
  await ledger.flushed() // the calls still in memory are in the table first
  // Calls a team member's Burnrate sent (origin_id set) keep the price it recorded.
  const select = `
    SELECT id, ts, endpoint, source, api_key_hash, tenant, agent, session, project, member, requested_model, billing, input_tokens, output_tokens, cache_read_tokens,
           cache_write_tokens, cache_write_1h_tokens, reasoning_tokens, usage_extra, cost_usd, priced
      FROM calls WHERE provider = @provider AND model = @model AND id > @after
       ${all ? '' : 'AND priced = 0'} AND ${BILLABLE}
       AND origin_id IS NULL
     ORDER BY id LIMIT ${CHUNK}`
  // The calls of other models it advised: their usage_extra names it among their advisors (a model
  // name that the LIKE pattern would not read as itself names none: Usage.advisor's keys never
  // hold `%`, `"` or `\`). Each is checked once read (`advisedBy`). Only Anthropic's API answers
  // with the advisor's parts: other providers' calls are not read twice.
  const advisedSelect = pricingId === 'anthropic' && ADVISOR_NAME.test(model)
    ? `
    SELECT id, ts, endpoint, source, api_key_hash, tenant, agent, session, project, member, requested_model, billing, input_tokens, output_tokens, cache_read_tokens,
           cache_write_tokens, cache_write_1h_tokens, reasoning_tokens, usage_extra, cost_usd, priced, model
      FROM calls WHERE provider = @provider AND model <> @model AND id > @after
       ${all ? '' : 'AND priced = 0'} AND usage_extra LIKE @advised
       AND origin_id IS NULL
     ORDER BY id LIMIT ${CHUNK}`
    : null
  // Only a call still as it was read is changed: another instance re-pricing it at once is not counted
  // twice, and a call that took a newer usage since (a background response's result, an imported answer
  // that grew, at the same cost: both unpriced) is not priced from the usage it had.
  const update = `UPDATE calls SET cost_usd = @cost, priced = 1
     WHERE id = @id AND cost_usd = @was AND priced = @wasPriced AND input_tokens = @input AND output_tokens = @output
       AND cache_read_tokens = @cacheRead AND cache_write_tokens = @cacheWrite AND cache_write_1h_tokens = @cacheWrite1h
       AND reasoning_tokens = @reasoning AND usage_extra IS NOT DISTINCT FROM @extra`
  const out: RepriceResult = { provider, model, repriced: 0, unpriced: 0, cost_usd_before: 0, cost_usd_after: 0 }
  // One transaction per chunk, run again when it loses to another's (a deadlock with an instance
  // writing calls, rollups or spend rows at once): what it counts is kept only once it commits.
  const chunk = (rows: Row[]) =>
    retryOnConflict(() => store.transaction(async (tx) => {
      const moves = await CostMoves.in(tx)
      const done = { repriced: 0, before: 0, after: 0 }
      for (const r of rows) {
        const usage = withUsageExtra({
          ...emptyUsage(),
          input_tokens: r.input_tokens,
          output_tokens: r.output_tokens,
          cache_read_tokens: r.cache_read_tokens,
          cache_write_tokens: r.cache_write_tokens,
          cache_write_1h_tokens: r.cache_write_1h_tokens,
          reasoning_tokens: r.reasoning_tokens,
        }, r.usage_extra)
        // As when it was recorded (proxy/call/recording.ts): a call with neither tokens nor audio seconds costs nothing.
        if (!hasBilledUnits(usage)) continue
        const own = r.model ?? model
        if (own !== model && !advisedBy(usage, model)) continue
        // A charge the provider reported is kept (the pricer puts it before every price).
        const p = pricer.price(pricingId, provider, own, usage, new Date(r.ts))
        if (!p.priced) continue
        if (p.cost_usd === r.cost_usd && r.priced === 1) continue
        const read = {
          input: r.input_tokens, output: r.output_tokens, cacheRead: r.cache_read_tokens, cacheWrite: r.cache_write_tokens,
          cacheWrite1h: r.cache_write_1h_tokens, reasoning: r.reasoning_tokens, extra: r.usage_extra,
        }
        if ((await tx.run(update, { cost: p.cost_usd, id: r.id, was: r.cost_usd, wasPriced: r.priced, ...read })) === 0) continue
        done.repriced++
        done.before += r.cost_usd
        done.after += p.cost_usd
        moves.add({ ...r, provider, model: own }, p.cost_usd - r.cost_usd, undefined, { marks: r.priced === 0 ? PRICED : undefined })
      }
      await moves.apply(tx, budgets)
      return { moves, done }
    }))
  const advised = `%"advisor":{%"${model}":{%`
  for (const sql of advisedSelect ? [select, advisedSelect] : [select]) {
    let after = 0
    for (;;) {
      const rows = await store.all<Row>(sql, sql === select ? { provider, model, after } : { provider, model, after, advised })
      if (rows.length === 0) break
      after = rows[rows.length - 1].id
      const { moves, done } = await chunk(rows)
      out.repriced += done.repriced
      out.cost_usd_before += done.before
      out.cost_usd_after += done.after
      moves.publish(ledger, budgets)
      if (rows.length < CHUNK) break
      await new Promise((r) => setImmediate(r))
    }
  }
  out.unpriced = (await store.get<{ n: number }>(
    `SELECT count(*) AS n FROM calls WHERE provider = @provider AND model = @model AND priced = 0 AND ${BILLABLE}`,
    { provider, model },
  ))!.n
  return out
}

/** A name the advisor pass looks for (`Usage.advisor`'s keys are such names: providers/anthropic.ts). */
const ADVISOR_NAME = /^[\w.:@-]{1,100}$/

/** Whether `model` ran a part of the call (`Usage.advisor`): the LIKE above is a first sieve only (`_` matches any character). */
function advisedBy(usage: Usage, model: string): boolean {
  return usage.advisor !== undefined && Object.hasOwn(usage.advisor, model)
}
