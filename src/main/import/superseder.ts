import { feedIdOf } from '../budgets/feed/publish'
import type { SpendMover } from '../budgets/state/pg/call-spend'
import type { CallRecord } from '../ledger/record'
import type { ServerContext } from '../server/context'
import { importsBeside, openImports, supersedeAnswers } from './supersede'

/**
 * How long after the proxy records an answer its imported twin is looked for: by then its row is
 * written (the ledger writes within `ledger.flush_interval_ms`, 100 ms at most), so an import that
 * commits the twin meanwhile is seen, or it matched the proxy's row itself (one SQLite write, or
 * PostgreSQL's claims, at a time).
 */
export const SUPERSEDE_AFTER_MS = 1_000

/** Answer ids kept to look up again while the database is away. */
const MAX_WAITING = 10_000

/** Imported answers looked at per step of the start-up pass (one stretch of the index, then the event loop's turn). */
const SWEEP_STEP = 2_000

/**
 * As the proxy records an answer with a provider id, the imported call of the same answer (a
 * Claude Code answer imported while it still streamed, past the import's wait: by this server's
 * watcher, a `burnrate import` beside it, or another instance on the same PostgreSQL) gives way
 * to it at once (./supersede.ts), not only when its log is read again: a log that never changes
 * again would keep both, the answer's money counted twice. Off the call's path: the ids wait a
 * moment and are looked up together; the ledger is flushed only when one has an imported twin.
 * Once started, it also looks over every imported answer not superseded yet for one the proxy
 * recorded (a server stopped within that moment of recording it, or one older than this build):
 * a stretch at a time, between other work.
 */
export function importSuperseder(ctx: ServerContext, shared: SpendMover | undefined, afterMs = SUPERSEDE_AFTER_MS): void {
  let waiting: string[] = []
  let timer: NodeJS.Timeout | null = null
  let running: Promise<void> | null = null
  let closed = false
  const schedule = (ms: number) => {
    if (timer || closed) return
    timer = setTimeout(() => {
      timer = null
      if (running) return schedule(ms)
      running = pass().finally(() => (running = null))
    }, ms)
    timer.unref()
  }
  const pass = async () => {
    const rids = waiting
    waiting = []
    try {
      const found = await openImports(ctx.store, rids)
      if (found.length === 0) return
      // The proxy's rows are written before they are looked for (false: the database refuses them now).
      if (!(await ctx.ledger.flushed())) throw new Error('the ledger could not be written')
      const done = await supersedeAnswers(ctx.store, found, { shared, feedId: feedIdOf(ctx.store) })
      if (!done) return
      // This machine's import keys name the proxy's calls from now on (a later read moves nothing).
      try {
        const move = ctx.db.prepare('UPDATE import_keys SET call_id = ? WHERE call_id = ?')
        ctx.db.transaction(() => {
          for (const s of done.superseded) move.run(s.twin, s.id)
        })()
      } catch {
        // the file is busy: the next read of the log finds the call superseded, and moves nothing
      }
      done.moves.publish(ctx.ledger, { meters: ctx.budgets })
    } catch (err) {
      // Tried again with the next ids (the database away, the file locked a moment).
      ctx.log.warn(`an imported call could not give way to the proxy's record of its answer yet: ${(err as Error).message}`)
      // (At most MAX_WAITING ids kept: past them, each is superseded at the next read of its log.)
      waiting = rids.concat(waiting).slice(-MAX_WAITING)
      schedule(afterMs * 5)
    }
  }
  let sweeping: Promise<void> | null = null
  const sweep = async () => {
    let after = ''
    try {
      while (!closed) {
        const step = await importsBeside(ctx.store, after, SWEEP_STEP)
        if (step.last === null) return
        after = step.last
        if (step.proxied.length > 0) {
          waiting = waiting.concat(step.proxied).slice(-MAX_WAITING)
          schedule(0)
        }
        await new Promise((r) => setImmediate(r))
      }
    } catch (err) {
      ctx.log.warn(`the imported calls could not be looked over for the proxy's records of their answers: ${(err as Error).message}`)
    }
  }
  const start = setTimeout(() => (sweeping = sweep()), afterMs)
  start.unref()
  ctx.ledger.onCall((call: CallRecord) => {
    // (A proxied call's record has no source: it is stored as `proxy`.)
    if ((call.source ?? 'proxy') !== 'proxy' || !call.response_id || closed) return
    if (waiting.length < MAX_WAITING) waiting.push(call.response_id)
    schedule(afterMs)
  })
  ctx.onClose(async () => {
    closed = true
    clearTimeout(start)
    if (timer) clearTimeout(timer)
    await sweeping
    await running
  })
}
