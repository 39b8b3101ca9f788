import { type SpendCounter, spendMover } from '../budgets/state/pg/call-spend'
import type { StoreStats } from '../import/importer'
import type { LoggedCall } from '../import/types'
import type { CallState } from '../proxy/call/state'
import type { BatchResult } from '../providers/types'
import type { ServerContext } from '../server/context'
import { type HeldSet, HeldRequests } from './held'

/**
 * Records the requests a Batch API ran, from its results file as a client reads it through
 * the proxy (`MeterResult.batchResults`): each request is a call of its own, with the reading
 * call's key, tenant, agent, session and project, its own model, tokens and batch-rate cost,
 * stored once by the provider's id of the request however often (and by however many
 * instances) the file is read. They count in today's spend and the budget rules at once, as
 * imported calls do (they are stored by the same code, ../import/importer.ts, loaded the first
 * time a results file is read).
 *
 * A write that fails (the SQLite file locked by another connection a moment longer than the
 * server's connection waits: the ledger's write thread, `burnrate import`; PostgreSQL away) is
 * tried again for about twenty minutes (RETRY_MS), as the ledger retries its own calls; past that
 * (or at shutdown) it is logged, and the requests are recorded when the file is read again.
 * A results file read line by line hands its requests on 1,000 at a time as the lines pass
 * (../providers/batch-results.ts), so they are stored while it streams and never held whole.
 * While they wait, a read of the same file replaces them (one copy per set, the newest read's),
 * and at most ledger.max_pending requests wait in all: a file over that is let go at once, with a
 * line saying so (./held.ts).
 */
export function batchRecorder(ctx: ServerContext, countSpend: SpendCounter | undefined): (s: CallState, results: BatchResult[]) => void {
  const pending = new Set<Promise<void>>()
  const held = new HeldRequests(ctx.config.ledger.max_pending)
  /**
   * Slices are stored one after the other, each in a turn of the event loop of its own, whatever
   * the sets being stored (a file's lines hand one on every 1,000 requests): never two
   * transactions of them at once (PostgreSQL), nor two slices in one turn.
   */
  let lane: Promise<unknown> = Promise.resolve()
  const inTurn = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = lane.then(nextTurn).then(fn)
    lane = run.catch(() => {})
    return run
  }
  /** The waits before another try: cut short at close (the last error is logged). */
  const waits = new Set<() => void>()
  let closed = false
  ctx.onClose(() => {
    closed = true
    for (const stop of waits) stop()
    return Promise.all(pending).then(() => {})
  })
  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const stop = () => {
        clearTimeout(timer)
        waits.delete(stop)
        resolve()
      }
      const timer = setTimeout(stop, ms)
      timer.unref()
      waits.add(stop)
    })
  /**
   * Stores the set's requests (the newest read's at each try), SLICE at a time, each slice in a
   * turn of the event loop of its own; a try again goes on from the slice that failed (the same
   * file read again holds the same requests in the same order).
   */
  const storeRetrying = async (set: HeldSet) => {
    const total: StoreStats = { imported: 0, updated: 0, reclassed: 0, superseded: 0, matched: 0, duplicates: 0, expired: 0, cost_usd: 0 }
    let from = 0
    for (let i = 0; ; i++) {
      try {
        const storeSlice = await storer(ctx, countSpend)
        for (; from < set.calls.length; from += SLICE) {
          const slice = set.calls.slice(from, from + SLICE)
          addStats(total, await inTurn(() => storeSlice(slice)))
        }
        return total
      } catch (err) {
        const left = set.calls.length - from
        if (closed || i >= RETRY_MS.length) throw new NotStored(left, (err as Error).message, { cause: err })
        if (i === 0) {
          const others = held.waiting
          if (!held.hold(set)) {
            throw new NotStored(left, `${others} requests already wait for the database, the most ledger.max_pending (${ctx.config.ledger.max_pending}) allows`, { cause: err }, true)
          }
          ctx.log.info(`batch results: ${left} requests wait for the database (${(err as Error).message}); trying again`)
        }
        await wait(RETRY_MS[i])
      }
    }
  }
  return (s, results) => {
    if (closed) return
    const provider = s.ctx.provider.name
    const pricingId = s.route.upstream.provider.pricingId
    const who = {
      api_key_hash: s.ctx.apiKeyHash,
      key_hint: s.ctx.keyHint,
      tenant: s.ctx.tenant,
      agent: s.ctx.agent,
      billing: s.ctx.billing ?? 'api',
      source: 'proxy',
    } as const
    const calls: LoggedCall[] = results.map((r) => ({
      key: r.key,
      ts: r.ts,
      provider,
      pricingId,
      model: r.model,
      session: s.ctx.session,
      project: s.ctx.project ?? '',
      usage: r.usage,
      response_id: r.responseId,
      endpoint: r.endpoint,
      who,
      matchByIdOnly: true,
    }))
    const { set, replaced } = held.join(calls)
    if (!set) {
      if (replaced) ctx.log.info(`batch results: a newer read of the same ${calls.length} requests replaces the one waiting for the database`)
      return
    }
    const p = storeRetrying(set).then(
      (stats) => {
        held.release(set)
        if (stats.imported > 0) {
          ctx.log.info(`batch results: ${stats.imported} requests recorded ($${stats.cost_usd}), ${stats.duplicates + stats.matched} recorded before`)
        }
      },
      (err: Error) => {
        held.release(set)
        const left = err instanceof NotStored ? err.left : set.calls.length
        if (err instanceof NotStored && err.overBound) {
          ctx.log.warn(`batch results: ${left} requests are not kept to be tried again: ${err.message}; they are recorded when the results file is read again`)
        } else {
          ctx.log.warn(`batch results: ${left} requests could not be recorded (${err.message}); they are recorded when the results file is read again`)
        }
      },
    )
    const done = p.finally(() => pending.delete(done))
    pending.add(done)
  }
}

/** The error of a set whose last `left` requests were not stored: the database failed past the tries, or (`overBound`) the requests waiting are at their bound. */
class NotStored extends Error {
  constructor(
    readonly left: number,
    message: string,
    options: ErrorOptions,
    readonly overBound = false,
  ) {
    super(message, options)
  }
}

/** The waits before trying again a write that failed (about twenty minutes in all). */
const RETRY_MS = [100, 500, 2_000, 5_000, 15_000, 40_000, 60_000, 120_000, 300_000, 600_000]

/**
 * Requests stored per transaction. Storing one prices it, writes it with its rollups and counts
 * it in the spend and budget meters, synchronously on SQLite: a results file's 50,000 requests
 * (OpenAI's most in a batch; Anthropic allows 100,000) in one transaction held the event loop, and
 * with it every proxied call, for seconds (3.2 s on a test machine); a slice holds it for a tenth
 * of that at most (test/providers/batch-turns.test.ts).
 */
const SLICE = 1000

/** The next turn of the event loop (after the I/O that came meanwhile). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

function addStats(total: StoreStats, s: StoreStats): void {
  total.imported += s.imported
  total.updated += s.updated
  total.superseded += s.superseded
  total.matched += s.matched
  total.duplicates += s.duplicates
  total.expired += s.expired
  total.cost_usd += s.cost_usd
}

/** What stores a slice of requests, once the database can take them. */
async function storer(ctx: ServerContext, countSpend: SpendCounter | undefined): Promise<(calls: LoggedCall[]) => Promise<StoreStats>> {
  const { countStored, storeCalls } = await import('../import/importer')
  const target = ctx.store.dialect === 'postgres' && countSpend ? { store: ctx.store, countSpend, moveSpend: spendMover(ctx.config) } : {}
  // PostgreSQL: the shared ledger is ready (its schema made, on a first start) once the ledger has written what it holds.
  if (target.store && !(await ctx.ledger.flushed())) throw new Error('the database cannot be written')
  const onCall = countStored(ctx.ledger, () => ctx.budgets)
  return (calls) => storeCalls(ctx.db, calls, { ...target, pricer: ctx.pricer, onCall })
}
