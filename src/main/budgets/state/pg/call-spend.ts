import type { CallRecord } from '../../../ledger/record'
import type { SqlStore } from '../../../storage/sql'
import type { PeriodClock } from '../../../time/zone'
import { budgetClockOf, type PeriodsConfig } from '../../clock'
import { MAX_WINDOW_HOURS } from '../../check'
import { minuteOf } from '../../meter-counters'
import type { CostAdjustment } from '../../types'
import { NOW_MS } from './sql'

/**
 * Every stored call counts in every spend row it belongs to (README: Budgets across instances).
 *
 * A spend row (`budget_spend`) starts from the calls already in `calls` (spend-rows.ts, the
 * seed); from then on each transaction that stores calls (the ledger's batches, imported logs)
 * adds their cost to every EXISTING row of the same API key whose
 * rule scope the call matches, for the period that contains its arrival time (this instance's
 * `timezone` and `budgets.week_start`, as the Meter counts), its session, or, for a rolling
 * window's row, the bucket of its arrival minute (budget_window_spend), in that same
 * transaction: a call written twice (a replayed batch) is inserted, and so counted, once.
 * Calls a team server ingests (`POST /api/ingest`, `origin_id` set) count in no budget, here or
 * in the seed: they were made, and checked against the member's own rules, on the member's
 * Burnrate (README: Team), as on SQLite.
 *
 * Except the rows its own reservation settled: a call admitted under block rule A has its cost
 * added to the rows of A it reserved on by its settlement (settlements.ts) at once, so it carries
 * its reservation's id and those rows' ids (`CallRecord.budget_settled`) and is not added to them
 * a second time; unless its settlement was not written yet (`settledFirst`): then storing it adds
 * its cost there too, and the settlement adds none.
 *
 * A seed and a batch must not miss each other: a seed reading `calls` while a batch has inserted
 * calls but not committed would not see them, and the batch's UPDATE would not see the row the
 * seed has not committed yet. So the batch takes a SHARED advisory lock per API key before its
 * UPDATE and holds it to its commit, and the seed takes the same lock EXCLUSIVELY in its own
 * transaction before its INSERT … SELECT: either the seed waits for the batch's commit (and its
 * snapshot, taken after the lock, sees the batch's calls) or the batch waits for the seed's (and
 * its UPDATE, a later statement, sees the new row). Taking it after the INSERT is enough: what
 * matters is that it is held from before the UPDATE's snapshot until the commit. Batches never
 * wait on each other (shared), and a seed holds one lock and waits on nothing else while it
 * holds it, so no cycle can form. Every transaction storing calls counts spend before it folds
 * rollups, so they all lock spend rows before rollup rows.
 */

/**
 * The advisory locks' key space: PostgreSQL's two-int4 form, (`LOCK_SPACE`, hashtext(key hash)),
 * never equal to a one-bigint lock such as the migrations' (`MIGRATION_LOCK`). One lock per API
 * key (not one for all) so a seed waits only for batches holding calls of its own key; two keys
 * whose hashes collide merely share a lock (a seed may wait for the other key's batch).
 */
export const LOCK_SPACE = 0x42527370 // 'BRsp'

/** Takes the exclusive lock of one API key's spend (a seed, in its own transaction, before reading `calls`). */
export async function lockKeyForSeed(tx: SqlStore, keyHash: string): Promise<void> {
  await tx.run(`SELECT pg_advisory_xact_lock(${LOCK_SPACE}, hashtext(@key))`, { key: keyHash })
}

/**
 * Takes the shared lock of each of these API keys (a transaction storing calls), in one order.
 * The same statement turns JIT compilation off for the rest of the transaction: the planner's
 * estimate for ADD_CALLS_SQL (it cannot know how few rows an `unnest` or a skip scan gives) is
 * past `jit_above_cost`, and compiling it costs hundreds of milliseconds for a statement that
 * runs in a few.
 */
export async function lockKeysForCalls(tx: SqlStore, keyHashes: readonly string[]): Promise<void> {
  await tx.run(
    `SELECT pg_advisory_xact_lock_shared(${LOCK_SPACE}, h), set_config('jit', 'off', true)
       FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(@keys::text[]) AS k ORDER BY 1) AS s`,
    { keys: [...new Set(keyHashes)] },
  )
}

/**
 * What a call whose reservation `rid` took spend rows `ids` carries (`CallRecord.budget_settled`,
 * `rid:ids`): its settlement adds its cost to exactly those rows, so storing it skips exactly
 * those (the ids, not the rule: a period the rule no longer limits, or a day that turned between
 * the call's arrival and its admission, still gets the call from its storing), but only once the
 * settlement is written. The reservation id decides which of the two adds the cost to those rows:
 * whichever records it in `budget_settled` first (settlements.ts; `settledFirst` here), so a
 * settlement still unwritten when the instance stops is not lost, and none is counted twice.
 */
export function settledRows(rid: string, ids: readonly number[]): string {
  return `${rid}:${ids.join(',')}`
}

const SETTLED = /^(?:([0-9A-Za-z-]{1,64}):)?(\d{1,18}(?:,\d{1,18})*)$/

/**
 * A `budget_settled` as the statement takes it: the reservation id ('' for none: a record of an
 * earlier release, whose rows are skipped as they were) and the rows' ids separated by commas,
 * or '' (anything else, e.g. an edited spill file, is '').
 */
function settledOf(r: CallRecord): { rid: string; ids: string } {
  const v = r.budget_settled
  const m = typeof v === 'string' ? SETTLED.exec(v) : null
  return m ? { rid: m[1] ?? '', ids: m[2] } : { rid: '', ids: '' }
}

/**
 * Records the reservation ids of these calls as settled (in `tx`, before any spend row is locked,
 * in one order, as settlements do) and returns those recorded now (`by_call`): their settlement
 * has not been written, so storing the call adds its cost to every row, its reserved ones
 * included, and the settlement, when written, adds nothing. A marker its settlement wrote is
 * no longer `owed` once its call is stored (the sweep may then delete it, leases.ts): until then it
 * is kept however late the call comes, so a settlement written long ago is never taken for one
 * never written.
 */
async function settledFirst(tx: SqlStore, rids: readonly string[]): Promise<Set<string>> {
  if (rids.length === 0) return new Set()
  const marked = await tx.all<{ rid: string; by_call: boolean }>(
    `INSERT INTO budget_settled (rid, by_call) SELECT DISTINCT rid, true FROM unnest(@rids::text[]) AS t (rid) ORDER BY rid
     ON CONFLICT (rid) DO UPDATE SET owed = false WHERE budget_settled.owed RETURNING rid, by_call`,
    { rids: [...new Set(rids)] },
  )
  return new Set(marked.filter((r) => r.by_call).map((r) => r.rid))
}

/** A call's requested model as the statement takes it: a string, else null (a spill file may hold anything). */
function requestedOf(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null
}

/**
 * How much older than its window a stored call's minute may be and still go into a window's
 * bucket (clock differences). Calls older than the longest window (744 h) by more are not looked at.
 */
const WINDOW_LEEWAY_MS = 3600_000

/** One call field against one element of the row's rule key, as `matches()` reads a pattern. */
function matchCond(p: string, col: string): string {
  return `CASE WHEN right(${p}, 1) = '*' THEN starts_with(c.${col}, left(${p}, -1)) ELSE c.${col} = ${p} END`
}

/**
 * One `calls` column against one element of the row's rule key (null: no condition). The model
 * pattern matches the recorded model or the requested one (NULL when the same or unknown: no
 * match), as the engine's scopeMatches.
 */
function scopeCond(i: number, col: string): string {
  const p = `(b.rk ->> ${i})`
  if (col === 'model') return `(${p} IS NULL OR ${matchCond(p, 'model')} OR COALESCE(${matchCond(p, 'requested')}, false))`
  return `(${p} IS NULL OR ${matchCond(p, col)})`
}

/**
 * One statement per batch. The counted calls come as arrays, summed per distinct identity first
 * (a batch holds few: the same key, periods, session and scope again and again). Each sum is
 * looked for in the spend rows of every rule key by the rows' unique index (rule key, API key,
 * period, start, session): the rule keys are read by a skip scan of that index (one probe per
 * distinct rule key, and there are few), so the cost does not grow with the rows of old periods,
 * sessions and other keys. A row's rule scope is read back from its key ([api_key_pattern,
 * provider, model_pattern, agent, tenant]; the pattern is matched already by the row being the
 * key's). The rows are locked in id order (as admission and settlement lock them) before each
 * gets the sum of its calls. A rolling window's rows (one per window length) are found by the
 * index's prefix and get the sums per arrival minute in their buckets, under the same locks.
 */
export const ADD_CALLS_SQL = `WITH RECURSIVE rks (rule_key) AS (
    (SELECT rule_key FROM budget_spend ORDER BY rule_key LIMIT 1)
    UNION ALL
    SELECT (SELECT b.rule_key FROM budget_spend b WHERE b.rule_key > rks.rule_key ORDER BY b.rule_key LIMIT 1)
      FROM rks WHERE rks.rule_key IS NOT NULL
  ),
  c AS (
    SELECT key, day, week, month, session, provider, model, requested, agent, tenant, settled, SUM(cost) AS cost
      FROM unnest(@key::text[], @cost::float8[], @day::bigint[], @week::bigint[], @month::bigint[], @session::text[],
                  @provider::text[], @model::text[], @requested::text[], @agent::text[], @tenant::text[], @settled::text[])
        AS t (key, cost, day, week, month, session, provider, model, requested, agent, tenant, settled)
     GROUP BY key, day, week, month, session, provider, model, requested, agent, tenant, settled
  ),
  want AS (
    SELECT c.*, w.period, w.start, w.sess
      FROM c CROSS JOIN LATERAL (VALUES ('daily', c.day, ''), ('weekly', c.week, ''), ('monthly', c.month, ''), ('session', 0::bigint, c.session))
        AS w (period, start, sess)
     WHERE w.period <> 'session' OR c.session <> ''
  ),
  hits AS (
    SELECT b.id, SUM(c.cost) AS cost
      FROM want c
      JOIN rks r ON r.rule_key IS NOT NULL
      -- One probe of the unique index per identity and rule key (LIMIT 1 keeps it a probe).
      CROSS JOIN LATERAL (
        SELECT s.id, s.rule_key::jsonb AS rk, s.rule_key FROM budget_spend s
         WHERE s.rule_key = r.rule_key AND s.api_key_hash = c.key AND s.period = c.period AND s.period_start = c.start AND s.session = c.sess
         LIMIT 1
      ) b
     WHERE ${scopeCond(1, 'provider')} AND ${scopeCond(2, 'model')} AND ${scopeCond(3, 'agent')} AND ${scopeCond(4, 'tenant')}
       AND (c.settled = '' OR b.id <> ALL (string_to_array(c.settled, ',')::bigint[]))
     GROUP BY b.id
  ),
  -- Per arrival minute, for windows: nothing at all to do (one probe of an empty partial index)
  -- while no window row exists; a minute too old for any window is NULL.
  cw AS (
    SELECT key, minute, provider, model, requested, agent, tenant, settled, SUM(cost) AS cost
      FROM unnest(@key::text[], @cost::float8[], @minute::bigint[], @provider::text[], @model::text[], @requested::text[], @agent::text[],
                  @tenant::text[], @settled::text[])
        AS t (key, cost, minute, provider, model, requested, agent, tenant, settled)
     WHERE minute IS NOT NULL AND EXISTS (SELECT 1 FROM budget_spend WHERE period = 'window')
     GROUP BY key, minute, provider, model, requested, agent, tenant, settled
  ),
  whits AS (
    SELECT b.id, c.minute, SUM(c.cost) AS cost
      FROM cw c
      -- A key's window rows (one per rule scope and window length), by their own partial index.
      CROSS JOIN LATERAL (
        SELECT s.id, s.rule_key::jsonb AS rk, s.period_start FROM budget_spend s
         WHERE s.api_key_hash = c.key AND s.period = 'window' AND s.session = ''
      ) b
     WHERE ${scopeCond(1, 'provider')} AND ${scopeCond(2, 'model')} AND ${scopeCond(3, 'agent')} AND ${scopeCond(4, 'tenant')}
       AND (c.settled = '' OR b.id <> ALL (string_to_array(c.settled, ',')::bigint[]))
       -- Only minutes the window can still count (an hour's leeway for clocks): an old imported call adds nothing.
       AND c.minute + ${WINDOW_LEEWAY_MS} > (SELECT ${NOW_MS}) - b.period_start
     GROUP BY b.id, c.minute
  ),
  locked AS (
    SELECT s.id, h.cost FROM budget_spend s LEFT JOIN hits h ON h.id = s.id
     WHERE s.id IN (SELECT id FROM hits UNION SELECT id FROM whits)
     ORDER BY s.id FOR UPDATE OF s
  ),
  -- A window's calls go into the buckets of their arrival minutes, under the row's lock (admission.ts).
  buckets AS (
    INSERT INTO budget_window_spend (spend_id, minute, spent_usd)
    SELECT id, minute, cost FROM whits WHERE id IN (SELECT id FROM locked)
    ON CONFLICT (spend_id, minute) DO UPDATE SET spent_usd = budget_window_spend.spent_usd + excluded.spent_usd
  )
  UPDATE budget_spend b SET spent_usd = b.spent_usd + l.cost FROM locked l WHERE b.id = l.id AND l.cost IS NOT NULL`

/** One cost to add to the spend rows a call belongs to (negative: a re-priced call that now costs less). */
interface SpendItem {
  api_key_hash: string
  ts: number
  cost: number
  session: string
  provider: string
  model: string
  /** The model the call requested when the answer named another, else null. */
  requested: string | null
  agent: string
  tenant: string
  /** The ids of the rows its settlement already wrote ('' for none). */
  settled: string
  /** Its reservation's id ('' for none). */
  rid?: string
}

/**
 * Adds the cost of `rows` (just inserted by `tx`, not yet committed) to the spend rows they
 * belong to. Calls that cost nothing or are billed by subscription count nowhere (as the seed
 * leaves them out) and cost no statement; a batch of them costs none at all.
 */
export async function addCallsToSpend(tx: SqlStore, rows: readonly CallRecord[], clock: PeriodClock): Promise<void> {
  const items: SpendItem[] = []
  const rids: string[] = []
  for (const r of rows) {
    if (!(r.cost_usd > 0) || r.billing === 'subscription') continue
    const settled = settledOf(r)
    if (settled.rid !== '') rids.push(settled.rid)
    items.push({
      api_key_hash: r.api_key_hash, ts: r.ts, cost: r.cost_usd, session: r.session ?? '', provider: r.provider, model: r.model,
      requested: requestedOf(r.requested_model), agent: r.agent, tenant: r.tenant, settled: settled.ids, rid: settled.rid,
    })
  }
  const unwritten = await settledFirst(tx, rids)
  for (const it of items) if (it.rid && unwritten.has(it.rid)) it.settled = ''
  await addToSpend(tx, items, clock)
}

/**
 * Moves the spend rows of re-priced calls (their `cost_usd` just changed by `tx`) by each call's
 * delta, in every row the call counts in: the rows its own settlement wrote included, since that
 * settlement counted the old cost. Subscription calls are left out by the caller (as re-pricing
 * leaves them out of spend).
 */
export async function moveSpendOf(tx: SqlStore, changes: readonly CostAdjustment[], clock: PeriodClock): Promise<void> {
  const items: SpendItem[] = []
  for (const c of changes) {
    if (c.delta !== 0 && Number.isFinite(c.delta)) items.push({ ...c, cost: c.delta, requested: requestedOf(c.requested_model), settled: '' })
  }
  await addToSpend(tx, items, clock)
}

async function addToSpend(tx: SqlStore, items: readonly SpendItem[], clock: PeriodClock): Promise<void> {
  const n = items.length
  if (n === 0) return
  const p = {
    key: new Array<string>(n), cost: new Array<number>(n), day: new Array<number>(n), week: new Array<number>(n), month: new Array<number>(n),
    session: new Array<string>(n), provider: new Array<string>(n), model: new Array<string>(n), requested: new Array<string | null>(n),
    agent: new Array<string>(n), tenant: new Array<string>(n), settled: new Array<string>(n), minute: new Array<number | null>(n),
  }
  // Older than the longest window by more than the leeway: no window counts it (no probe).
  const oldest = Date.now() - MAX_WINDOW_HOURS * 3600_000 - WINDOW_LEEWAY_MS
  for (let i = 0; i < n; i++) {
    const r = items[i]
    p.key[i] = r.api_key_hash
    p.cost[i] = r.cost
    p.day[i] = clock.dayOf(r.ts).start
    p.week[i] = clock.weekOf(r.ts).start
    p.month[i] = clock.monthOf(r.ts).start
    p.session[i] = r.session
    p.provider[i] = r.provider
    p.model[i] = r.model
    p.requested[i] = r.requested
    p.agent[i] = r.agent
    p.tenant[i] = r.tenant
    p.settled[i] = r.settled
    p.minute[i] = r.ts > oldest ? minuteOf(r.ts) : null
  }
  await lockKeysForCalls(tx, p.key)
  await tx.run(ADD_CALLS_SQL, p)
}

/** Stored calls counted in the spend rows: what every transaction storing calls in PostgreSQL runs (in the server's budget clock). */
export type SpendCounter = (tx: SqlStore, rows: readonly CallRecord[]) => Promise<void>

/** `addCallsToSpend` in this config's budget clock (`timezone`, `budgets.week_start`, or the one the database holds), as the Meter reads it. */
export function spendCounter(config: PeriodsConfig): SpendCounter {
  const clock = budgetClockOf(config)
  return (tx, rows) => addCallsToSpend(tx, rows, clock)
}

/** Re-priced calls moved in the spend rows: what re-pricing runs in each transaction that changes calls. */
export type SpendMover = (tx: SqlStore, changes: readonly CostAdjustment[]) => Promise<void>

/** `moveSpendOf` in this config's budget clock. */
export function spendMover(config: PeriodsConfig): SpendMover {
  const clock = budgetClockOf(config)
  return (tx, changes) => moveSpendOf(tx, changes, clock)
}
