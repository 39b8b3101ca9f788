import type Database from 'better-sqlite3'
import { SESSION_MEMORY_MS } from '../budgets/meter'
import type { Feature } from '../server/context'
import { bareUrl } from '../storage/url'

const DAY = 86_400_000

/** Calls deleted per step: about 20 ms of the writer's time in a 10M-call ledger on a busy 2-core machine (2,000 took 80 ms), so a proxied call never waits long behind it. */
export const PRUNE_BATCH = 500
/** Pause between steps while old calls remain (a backlog after turning retention on is worked off in the background). */
export const PRUNE_BUSY_DELAY_MS = 100
/** How often to look for calls that have aged past the retention once the backlog is gone. */
export const PRUNE_IDLE_DELAY_MS = 10 * 60_000

/**
 * Old calls a step looks at, at most: past the calls retention keeps (a session still in use, a
 * member's unsent backlog) it goes on from where the last step stopped, so a step never reads
 * through all of them (a quarter of a million kept calls held the write lock 0.5-0.8 s a step).
 */
export const PRUNE_SCAN = 10 * PRUNE_BATCH

/**
 * Deletes up to `limit` of the oldest calls that arrived before `before` (ms), oldest first from
 * where the last step stopped (see below), and returns how many it deleted. Only calls the
 * dashboard rollups already include are deleted (the rollups keep their totals), and never the
 * newest call, so SQLite never hands out a pruned id
 * again (ids stay unique for import keys and exports). Nor the call with the highest revision
 * (./revisions.ts numbers the next one above it): pruned, a later revision would be numbered
 * below what the team sender already sent, and never be sent. Nor, on a team server, each
 * member's last call (KEEPS_MEMBERS_LAST). Nor, on a member (`team`: the team server's address
 * as the sender keys its cursor), a call the team server has not acknowledged (KEEPS_UNSENT).
 * Runs on whichever connection
 * writes the ledger (the write thread's, or the main one).
 * A step reads at most PRUNE_SCAN old calls, in windows from where the step before stopped (per
 * connection); once a pass reaches `before` the next starts again from the oldest, so a call kept
 * once (its session idle since, its member's backlog acknowledged) is deleted at the next pass.
 * The step, and the time it pruned before, are one transaction.
 */
export function pruneCalls(db: Database.Database, before: number, limit: number, team: string | null = null): number {
  return pruneStepOn(db, before, limit, team).deleted
}

/** What a step of `pruneCalls` did: how many calls it deleted, and whether its pass goes on (it stopped at PRUNE_SCAN or `limit`). */
export interface Pruned {
  deleted: number
  more: boolean
}

/** `pruneCalls`, saying whether old calls are left to look at (the next step should come soon, not at the idle delay). */
export function pruneStepOn(db: Database.Database, before: number, limit: number, team: string | null = null): Pruned {
  let step = steps.get(db)
  if (!step) steps.set(db, (step = pruneStep(db)))
  // Immediate: the write lock first, as every writer of the ledger takes it (never a read turned write).
  return step.immediate(before, limit, team)
}

interface Cursor {
  id: number
  ts: number
}
type Step = Database.Transaction<(before: number, limit: number, team: string | null) => Pruned>
const steps = new WeakMap<Database.Database, Step>()

/** One step of `pruneCalls` on `db`, as a transaction, its cursor kept with it. */
function pruneStep(db: Database.Database): Step {
  // The next old calls after the cursor (ts, then id: the order of calls_ts), read from the index
  // alone: those at the cursor's ts after its id (a batch's results can share one instant), then later ones.
  const sameTs = db.prepare('SELECT id, ts FROM calls INDEXED BY calls_ts WHERE ts = @ts AND id > @id AND ts < @before ORDER BY id LIMIT @n')
  const laterTs = db.prepare('SELECT id, ts FROM calls INDEXED BY calls_ts WHERE ts > @ts AND ts < @before ORDER BY ts, id LIMIT @n')
  const window = (before: number, at: Cursor | null, n: number): Cursor[] => {
    if (at === null) return laterTs.all({ ts: -Number.MAX_VALUE, before, n }) as Cursor[]
    const rows = sameTs.all({ ts: at.ts, id: at.id, before, n }) as Cursor[]
    return rows.length < n ? rows.concat(laterTs.all({ ts: at.ts, before, n: n - rows.length }) as Cursor[]) : rows
  }
  const remove = db.prepare(`
    DELETE FROM calls WHERE id IN (
      SELECT c.id FROM calls c
       WHERE c.id IN (SELECT value FROM json_each(@ids))
         AND c.id <= (SELECT last_call_id FROM dash_state WHERE id = 1)
         AND c.id < (SELECT max(id) FROM calls)
         AND c.id IS NOT (SELECT id FROM calls WHERE revision IS NOT NULL ORDER BY revision DESC, id DESC LIMIT 1)
         AND ${KEEPS_MEMBERS_LAST}
         AND ${KEEPS_LIVE_SESSIONS}
         AND ${KEEPS_UNSENT})
    RETURNING ${GONE_COLUMNS}`)
  const count = db.prepare(COUNT_PRUNED)
  const mark = db.prepare('UPDATE retention_state SET pruned_before = max(pruned_before, ?) WHERE id = 1')
  /** The last old call the last step looked at (null: the next pass starts from the oldest). */
  let cursor: Cursor | null = null
  return db.transaction((before: number, limit: number, team: string | null): Pruned => {
    const active = Date.now() - SESSION_MEMORY_MS
    let at = cursor
    // A step that starts where the last one stopped goes round once more from the oldest.
    let wrapped = at === null
    // Whether this step reached the end of the old calls: its pass is over, even when the step
    // went round from the oldest after it (kept calls past PRUNE_SCAN would otherwise never end one).
    let ended = false
    let scanned = 0
    let deleted = 0
    const gone = new PrunedRequests()
    while (deleted < limit && scanned < PRUNE_SCAN) {
      const n = Math.min(limit - deleted, PRUNE_SCAN - scanned)
      const rows = window(before, at, n)
      if (rows.length > 0) {
        const removed = remove.all({ ids: JSON.stringify(rows.map((r) => r.id)), active, team }) as Gone[]
        gone.add(removed)
        deleted += removed.length
        scanned += rows.length
        at = rows[rows.length - 1]
      }
      if (rows.length < n) {
        // Every old call looked at: the next pass starts from the oldest.
        at = null
        ended = true
        if (wrapped) break
        wrapped = true
      }
    }
    cursor = at
    for (const p of gone.sessions()) count.run(p)
    if (deleted > 0) mark.run(before)
    return { deleted, more: at !== null && !ended }
  })
}

/** What a step returns of each call it deleted: its session row's keys, and whether that row counts it (a request: not superseded). */
export const GONE_COLUMNS = 'tenant, agent, session, CASE WHEN superseded_by IS NULL THEN 1 ELSE 0 END AS request'

/** A call a step deleted (GONE_COLUMNS). */
export interface Gone {
  tenant: string
  agent: string
  session: string
  request: number
}

/**
 * Adds a step's pruned requests to their sessions' rows (`pruned_requests`, SQLite migration 35,
 * PostgreSQL 29), in the step's transaction: the dashboard's sessions list reads how many of a
 * session's requests were pruned from there, not by counting the calls it kept (a CI bot's one
 * session of a million kept calls took seconds at every request of the list).
 */
export const COUNT_PRUNED =
  'UPDATE dash_session SET pruned_requests = pruned_requests + @n WHERE tenant = @tenant AND agent = @agent AND session = @session'

/** A step's pruned requests by session (only named sessions have a row; a superseded call is none of its requests). */
export class PrunedRequests {
  private readonly by = new Map<string, { tenant: string; agent: string; session: string; n: number }>()

  add(rows: readonly Gone[]): void {
    for (const r of rows) {
      if (r.session === '' || Number(r.request) !== 1) continue
      const k = r.tenant + '\0' + r.agent + '\0' + r.session
      const s = this.by.get(k)
      if (s) s.n++
      else this.by.set(k, { tenant: r.tenant, agent: r.agent, session: r.session, n: 1 })
    }
  }

  /** In one order (keys sorted, as the rollups' writers touch rows), so two transactions never wait on each other in a cycle. */
  sessions(): { tenant: string; agent: string; session: string; n: number }[] {
    return [...this.by.keys()].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)).map((k) => this.by.get(k)!)
  }
}

/**
 * On a team server, never a member's last call as it numbered it (`c`: the call looked at; SQLite
 * and PostgreSQL): a member sending its calls again from its first (a new spelling of team.url
 * starts a new cursor) has them taken for duplicates by being older than that one
 * (../team/store.ts, `prunedSince`), which a member whose every call was pruned would not have.
 */
/**
 * Never a call of a session still in use (a call in it since @active: what the budgets remember,
 * SESSION_MEMORY_MS): a session cap counts the whole session however long ago it began, read back
 * from its calls after a restart or a rule change (../budgets/shared-history.ts,
 * SESSION_HISTORY_SQL, which reads this instance's own calls: a team server's ingested ones,
 * `origin_id` set, are pruned as before). Its calls are pruned once it has been idle that long.
 * (`s.session <> ''` lets the calls_session_ts index serve.)
 */
export const KEEPS_LIVE_SESSIONS =
  "(c.session = '' OR c.origin_id IS NOT NULL OR NOT EXISTS (SELECT 1 FROM calls s WHERE s.session = c.session AND s.session <> '' AND s.ts >= @active AND s.origin_id IS NULL))"

/**
 * On a member of a team (`@team`, the team server's address as ../team/cursor.ts keys it), never a
 * call the team server has not acknowledged: one after the sender's cursor, or revised after its
 * revision cursor (sent again with its new cost). A member offline for longer than the retention,
 * or whose token the server refuses, sends its backlog whole once it may. No cursor for the
 * address yet: nothing is pruned.
 */
export const KEEPS_UNSENT =
  '(@team IS NULL OR EXISTS (SELECT 1 FROM team_cursor t WHERE t.url = @team AND c.id <= t.last_id AND (c.revision IS NULL OR c.revision < t.revision OR (c.revision = t.revision AND c.id <= t.revision_id))))'

export const KEEPS_MEMBERS_LAST =
  '(c.origin_id IS NULL OR c.origin_id < (SELECT max(m.origin_id) FROM calls m WHERE m.member = c.member AND m.origin_id IS NOT NULL))'

/**
 * Calls before this time (ms) may have been pruned (0: none ever was). What arrives for that
 * time later (an old agent log imported) cannot be matched to the calls it repeats any more.
 */
export function prunedBefore(db: Database.Database): number {
  return (db.prepare('SELECT pruned_before FROM retention_state WHERE id = 1').pluck().get() as number | undefined) ?? 0
}

/** The first instant whose calls are kept with a retention of `days` days. */
export function retentionCutoff(days: number, now: number): number {
  return now - days * DAY
}

export interface PrunerOptions {
  /** `ledger.retention_days`. */
  days: number
  /** Deletes one batch, wherever the ledger writes; resolves to how many calls it deleted. */
  prune: (before: number, limit: number) => Promise<number>
  /** Whether the last step stopped before it looked at every old call (`Pruned.more`): the next one then comes after busyDelayMs. */
  unfinished?: () => boolean
  batch?: number
  busyDelayMs?: number
  idleDelayMs?: number
  now?: () => number
  onError?: (err: unknown) => void
}

/**
 * Prunes raw calls older than the retention in bounded batches on a timer: each step deletes at
 * most `batch` calls and the next one is scheduled only after it finished, so the writer is
 * never held for long and the event loop is free between steps. The next step comes after
 * busyDelayMs while a backlog remains (a whole batch deleted, or a step that stopped among kept
 * calls before it looked at every old one), else after idleDelayMs.
 */
export class RetentionPruner {
  private timer: NodeJS.Timeout | null = null
  private stopped = false
  private running: Promise<number> | null = null
  /** Calls deleted since start. */
  deleted = 0
  /** Steps run since start. */
  steps = 0

  constructor(private readonly opts: PrunerOptions) {}

  get batch(): number {
    return this.opts.batch ?? PRUNE_BATCH
  }

  start(firstDelayMs = 0): this {
    this.schedule(firstDelayMs)
    return this
  }

  /** One batch: deletes at most `batch` calls older than the retention. */
  async step(): Promise<number> {
    const now = (this.opts.now ?? Date.now)()
    this.running = this.opts.prune(retentionCutoff(this.opts.days, now), this.batch)
    try {
      const n = await this.running
      this.deleted += n
      this.steps++
      return n
    } finally {
      this.running = null
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.step().then(
        (n) => this.schedule(n >= this.batch || this.opts.unfinished?.() ? (this.opts.busyDelayMs ?? PRUNE_BUSY_DELAY_MS) : (this.opts.idleDelayMs ?? PRUNE_IDLE_DELAY_MS)),
        (err) => {
          this.opts.onError?.(err)
          this.schedule(this.opts.busyDelayMs ?? PRUNE_BUSY_DELAY_MS)
        },
      )
    }, ms)
    this.timer.unref()
  }

  /** Stops scheduling; waits for a step under way. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.running?.catch(() => 0)
  }
}

/** Start-up is left alone: the first step runs this long after the server started. */
const FIRST_STEP_DELAY_MS = 5_000

/** `ledger.retention_days`: prunes raw calls older than that in the background (nothing when unset). */
export const retention: Feature = (ctx) => {
  const days = ctx.config.ledger.retention_days
  if (days === null) return
  // A member keeps what its team server has not acknowledged (KEEPS_UNSENT).
  const team = ctx.config.team.url ? bareUrl(ctx.config.team.url) : null
  const pruner = new RetentionPruner({
    days,
    prune: (before, limit) => ctx.ledger.prune(before, limit, team),
    unfinished: () => ctx.ledger.pruneUnfinished === true,
    onError: (err) => {
      // Busy: the other writer held the database for a moment; the next step tries again.
      if ((err as { code?: string })?.code !== 'SQLITE_BUSY') ctx.log.warn(`retention: pruning old calls failed: ${(err as Error)?.message ?? String(err)}`)
    },
  }).start(FIRST_STEP_DELAY_MS)
  ctx.onClose(() => pruner.stop())
}
