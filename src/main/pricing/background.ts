import { feedIdOf } from '../budgets/feed/publish'
import type { CallLedger as Ledger } from '../ledger/types'
import { hasBilledUnits, type Usage } from '../metering/usage'
import { usageExtra } from '../metering/usage-extra'
import type { ServerContext } from '../server/context'
import type { SqlStore } from '../storage/sql'
import { CostMoves, type MovedCall, type SpendTargets } from './moves'
import type { Pricer } from './price'

/** A background response's final usage, as a later answer about it gave it (`MeterResult.backgroundUsage`). */
export interface BackgroundDone {
  /** Burnrate's provider name (the ledger's `provider`). */
  provider: string
  /** The provider's id in the price data. */
  pricingId: string
  /** The response's id (`resp_…`): the creating call's `response_id`. */
  responseId: string
  usage: Usage
}

/** The creating call as read back: what it is counted by (its provider is the answer's), and its tokens and cost. */
interface Row extends Omit<MovedCall, 'provider'> {
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  cost_usd: number
}

/**
 * The call that created a background response (same provider and `response_id`, a Responses
 * POST still estimated: its answer was `queued`, without usage) takes the response's final usage
 * and its cost at the call's time, once: its row (then `estimated: false`), the rollups, today's
 * spend and the budget meters move together, as re-pricing moves them (./moves.ts). Resolves to
 * whether a call took it (false: no such call here, or it took its real usage already).
 */
export async function settleBackground(
  store: SqlStore,
  ledger: Pick<Ledger, 'flushed' | 'spend'>,
  pricer: Pricer,
  done: BackgroundDone,
  budgets: SpendTargets = {},
): Promise<boolean | 'later'> {
  // The creating call may still be on its way to the table (false: not all written, e.g. PostgreSQL away).
  const written = await ledger.flushed()
  let found = false
  const moves = await store.transaction(async (tx) => {
    // Calls a team member's Burnrate sent (origin_id set) are that Burnrate's to settle.
    const row = await tx.get<Row>(
      `SELECT id, ts, endpoint, model, api_key_hash, tenant, agent, session, project, member, requested_model, billing,
              input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd
         FROM calls WHERE response_id = @rid AND provider = @provider AND endpoint = 'responses' AND estimated = 1 AND origin_id IS NULL
        ORDER BY id LIMIT 1`,
      { rid: done.responseId, provider: done.provider },
    )
    if (!row) return null
    found = true
    const u = done.usage
    let cost = 0
    let priced = true
    // Priced as the recorder prices a call (nothing to price in a response that produced nothing).
    if (hasBilledUnits(u)) {
      const p = pricer.price(done.pricingId, done.provider, row.model, u, new Date(row.ts))
      cost = p.cost_usd
      priced = p.priced
    }
    // Only while still estimated: a second answer about the response (another poll, another instance) changes nothing.
    const changed = await tx.run(
      `UPDATE calls SET input_tokens = @input, output_tokens = @output, cache_read_tokens = @cacheRead, cache_write_tokens = @cacheWrite,
              cache_write_1h_tokens = @cacheWrite1h, reasoning_tokens = @reasoning, usage_extra = @extra, cost_usd = @cost, priced = @priced,
              estimated = 0
        WHERE id = @id AND estimated = 1`,
      {
        id: row.id, input: u.input_tokens, output: u.output_tokens, cacheRead: u.cache_read_tokens, cacheWrite: u.cache_write_tokens,
        cacheWrite1h: u.cache_write_1h_tokens, reasoning: u.reasoning_tokens, cost, priced: priced ? 1 : 0,
        // Its searches (and any other part billed apart) kept as the recorder keeps them: re-pricing it later charges them again.
        extra: usageExtra(u),
      },
    )
    if (changed === 0) return null
    const moves = await CostMoves.in(tx)
    moves.add({ ...row, provider: done.provider }, cost - row.cost_usd, {
      input_tokens: u.input_tokens - row.input_tokens,
      output_tokens: u.output_tokens - row.output_tokens,
      cache_read_tokens: u.cache_read_tokens - row.cache_read_tokens,
      cache_write_tokens: u.cache_write_tokens - row.cache_write_tokens,
    })
    await moves.apply(tx, budgets)
    return moves
  })
  if (!moves) return found ? false : written ? false : 'later'
  moves.publish(ledger, budgets)
  return true
}

/** After a failed attempt (the creating call not yet stored, the database away), when to try again. */
const BACKGROUND_RETRIES_MS = [1_000, 5_000, 15_000, 60_000, 300_000]

/**
 * A background response's final usage goes to the call that created it (settleBackground),
 * off the call's path; the budget meters are read when it runs (the budgets feature sets them).
 * The client stops polling once it has the final answer, so an attempt that fails because the
 * creating call is not stored yet or the database is away is tried again later (BACKGROUND_RETRIES_MS,
 * in memory: a restart meanwhile leaves the call estimated). Shutting down waits for attempts
 * under way (the ledger and the store are still open then) and drops the retries still waiting.
 */
export function backgroundSettler(ctx: ServerContext, shared: SpendTargets['shared']): (done: BackgroundDone) => void {
  const pending = new Set<Promise<unknown>>()
  const timers = new Set<NodeJS.Timeout>()
  let closed = false
  ctx.onClose(() => {
    closed = true
    for (const t of timers) clearTimeout(t)
    timers.clear()
    return Promise.all(pending).then(() => {})
  })
  const attempt = (done: BackgroundDone, tries: number): void => {
    const again = (why: string) => {
      const wait = BACKGROUND_RETRIES_MS[tries]
      if (closed || wait === undefined) {
        ctx.log.warn(`background response ${done.responseId}: its real usage could not be recorded (${why}); the call stays estimated`)
        return
      }
      ctx.log.info(`background response ${done.responseId}: its real usage is recorded again in ${wait / 1000} s (${why})`)
      const timer = setTimeout(() => {
        timers.delete(timer)
        attempt(done, tries + 1)
      }, wait)
      timer.unref()
      timers.add(timer)
    }
    const p = settleBackground(ctx.store, ctx.ledger, ctx.pricer, done, { meters: ctx.budgets, shared, feedId: feedIdOf(ctx.store) })
      .then(
        (r) => {
          if (r === 'later') again('its creating call is not stored yet')
        },
        (err: Error) => again(err.message),
      )
      .finally(() => pending.delete(p))
    pending.add(p)
  }
  return (done) => attempt(done, 0)
}
