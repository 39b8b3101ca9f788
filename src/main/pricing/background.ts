import { feedIdOf } from '../budgets/feed/publish'
import type { CallLedger as Ledger } from '../ledger/types'
import { hasBilledUnits, type Usage } from '../metering/usage'
import { usageExtra } from '../metering/usage-extra'
import type { ServerContext } from '../server/context'
import type { SqlStore } from '../storage/sql'
import { PendingSettlements } from './background-pending'
import { CostMoves, type MovedCall, type SpendTargets } from './moves'
import type { Pricer } from './price'
import { lockedRead, SET_USAGE, type StoredTokens, tokensGained, usageParams } from './usage-taken'

/** A background response's final usage, as a later answer about it gave it (`MeterResult.backgroundUsage`). */
export interface BackgroundDone {
  /** Burnrate's provider name (the ledger's `provider`). */
  provider: string
  /** The provider's id in the price data. */
  pricingId: string
  /** The response's id (`resp_…`), or an xAI video's `request_id`: the creating call's `response_id`. */
  responseId: string
  /** Null when the answer ended the response without saying what it used (cancelled): the estimate stands. */
  usage: Usage | null
}

/** The creating call as read back: what it is counted by (its provider is the answer's), and its tokens and cost. */
interface Row extends Omit<MovedCall, 'provider'>, StoredTokens {
  cost_usd: number
  priced: number
}

/**
 * The call that created a background response (same provider and `response_id`, a Responses
 * POST still estimated: its answer was `queued`, without usage; a Gemini background interaction's,
 * answered `in_progress`: ../providers/gemini-interactions.ts; or an xAI video's POST, answered
 * with its `request_id` only: ../providers/xai-video.ts; or a Perplexity async job's POST:
 * ../providers/perplexity-async.ts) takes the response's final usage
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
  const u = done.usage
  if (!u) return false
  await pricer.ready()
  // The creating call may still be on its way to the table (false: not all written, e.g. PostgreSQL away).
  const written = await ledger.flushed()
  let found = false
  const settled = await store.transaction(async (tx) => {
    // Calls a team member's Burnrate sent (origin_id set) are that Burnrate's to settle. Locked until
    // this commits: a re-price in between would otherwise be counted twice (moved by real - cost read).
    const row = await tx.get<Row>(
      `SELECT id, ts, endpoint, model, api_key_hash, tenant, agent, session, project, member, requested_model, billing,
              input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, priced
         FROM calls WHERE response_id = @rid AND provider = @provider AND endpoint IN ('responses', 'interactions', 'videos', 'async.chat.completions') AND estimated = 1 AND origin_id IS NULL
        ORDER BY id LIMIT 1${lockedRead(tx)}`,
      { rid: done.responseId, provider: done.provider },
    )
    if (!row) return null
    found = true
    let cost = 0
    let priced = true
    // Priced as the recorder prices a call (nothing to price in a response that produced nothing).
    if (hasBilledUnits(u)) {
      const p = pricer.price(done.pricingId, done.provider, row.model, u, new Date(row.ts))
      cost = p.cost_usd
      priced = p.priced
    }
    // Only while still estimated: a second answer about the response (another poll, another instance) changes nothing.
    const changed = await tx.run(`UPDATE calls SET ${SET_USAGE}, estimated = 0 WHERE id = @id AND estimated = 1`, {
      id: row.id,
      ...usageParams(u, cost, priced),
    })
    if (changed === 0) return null
    const moves = await CostMoves.in(tx)
    // Its tokens are no longer estimated, and it may have gained (or lost) a price: the metrics count both.
    const marks = { settled: true, priced: row.priced === 0 && priced, unpriced: row.priced === 1 && !priced }
    moves.add({ ...row, provider: done.provider }, cost - row.cost_usd, tokensGained(row, u), { usageIn: done.responseId, marks })
    await moves.apply(tx, budgets)
    return { moves, taken: { ...u, ts: row.ts, model: row.model, priced, cost_usd: cost, usage_extra: usageExtra(u) } }
  })
  if (!settled) return found ? false : written ? false : 'later'
  // What the job used teaches what the next background jobs of its model reserve; learnt before
  // the move ends its hold (the hold knows the call that created it).
  budgets.meters?.learnBackground?.(done.provider, done.responseId, settled.taken)
  settled.moves.publish(ledger, budgets)
  return true
}

/** After a failed attempt (the creating call not yet stored, the database away), when to try again. */
const BACKGROUND_RETRIES_MS = [1_000, 5_000, 15_000, 60_000, 300_000]
/** After those, every this long... */
const BACKGROUND_LATER_MS = 15 * 60_000
/** ...until this long after the first failure: then the call stays estimated (and it is logged). */
const BACKGROUND_KEEP_MS = 7 * 24 * 3600_000
/** Kept settlements are tried again this long after start-up at the earliest (the server is up, the ledger started). */
const RESUME_AFTER_MS = 1_000

/**
 * A background response's final usage goes to the call that created it (settleBackground),
 * off the call's path; the budget meters are read when it runs (the budgets feature sets them).
 * The client stops polling once it has the final answer, so an attempt that fails because the
 * creating call is not stored yet or the database is away is tried again later
 * (BACKGROUND_RETRIES_MS, then every 15 minutes for up to 7 days), and kept in the data folder's
 * file meanwhile (./background-pending.ts): a restart tries it again instead of leaving the call
 * estimated. Shutting down waits for attempts under way (the ledger and the store are still open
 * then); the retries still waiting are kept for the next start.
 */
export function backgroundSettler(ctx: ServerContext, shared: SpendTargets['shared']): (done: BackgroundDone) => void {
  const pending = new Set<Promise<unknown>>()
  const timers = new Set<NodeJS.Timeout>()
  const kept = new PendingSettlements(ctx.db)
  let closed = false
  ctx.onClose(() => {
    closed = true
    for (const t of timers) clearTimeout(t)
    timers.clear()
    return Promise.all(pending).then(() => {})
  })
  const later = (ms: number, fn: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer)
      if (!closed) fn()
    }, ms)
    timer.unref()
    timers.add(timer)
  }
  const attempt = (done: BackgroundDone, tries: number, firstAt: number | null): void => {
    const again = (why: string) => {
      const now = Date.now()
      const since = firstAt ?? now
      const wait = BACKGROUND_RETRIES_MS[tries] ?? (now - since < BACKGROUND_KEEP_MS ? BACKGROUND_LATER_MS : undefined)
      if (wait === undefined) {
        ctx.log.warn(`background response ${done.responseId}: its real usage could not be recorded (${why}); the call stays estimated`)
        forget(done)
        return
      }
      try {
        kept.save({ done, attempts: tries + 1, firstAt: since, nextAt: now + wait })
      } catch {
        // the file cannot be written: the retry is held in memory only
      }
      if (closed) return
      ctx.log.info(`background response ${done.responseId}: its real usage is recorded again in ${wait / 1000} s (${why})`)
      later(wait, () => attempt(done, tries + 1, since))
    }
    const p = settleBackground(ctx.store, ctx.ledger, ctx.pricer, done, { meters: ctx.budgets, shared, feedId: feedIdOf(ctx.store) })
      .then(
        (r) => {
          if (r === 'later') return again('its creating call is not stored yet')
          if (firstAt !== null) forget(done)
          // Its cost is in (or was already, or it is not this Burnrate's call): its budget hold ends.
          ctx.budgets?.endBackground?.(done.provider, done.responseId)
        },
        (err: Error) => again(err.message),
      )
      .finally(() => pending.delete(p))
    pending.add(p)
  }
  const forget = (done: BackgroundDone): void => {
    try {
      kept.remove(done)
    } catch {
      // nothing kept, or the file cannot be written: the row is tried again and changes nothing
    }
  }
  // The ones an earlier run kept: tried again once this one is up, when they are due.
  try {
    const now = Date.now()
    for (const k of kept.all()) later(Math.max(RESUME_AFTER_MS, k.nextAt - now), () => attempt(k.done, k.attempts, k.firstAt))
  } catch {
    // the file cannot be read: nothing to resume
  }
  return (done) => attempt(done, 0, null)
}
