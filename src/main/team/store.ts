import { applyRollups } from '../dashboard/rollup/apply'
import { type CostChange, adjustRollups } from '../dashboard/rollup/adjust'
import { CALL_COLUMNS, callValues } from '../ledger/columns'
import { PG_TYPES, pgSafe } from '../ledger/pg/insert'
import type { CallRecord } from '../ledger/record'
import { type MovedCall, costChangeOf } from '../pricing/moves'
import type { StoredCall } from '../ledger/types'
import { retryOnConflict } from '../storage/conflict'
import type { SqlStore } from '../storage/sql'
import { heldBatchTwins, lockBatchTwins } from './batch-twins'
import type { IngestRow } from './validate'

const COLUMNS = [...CALL_COLUMNS, 'origin_id', 'revision'] as const

/**
 * One ingested call, stored unless this member sent the same id before: the unique index
 * `calls_origin (member, origin_id)` decides, in the database, so two team instances on one
 * PostgreSQL taking the same replayed batch still store each call once.
 */
export const INSERT_INGESTED_SQL = `INSERT INTO calls (${COLUMNS.join(', ')})
  VALUES (${COLUMNS.map((c) => '@' + c).join(', ')})
  ON CONFLICT (member, origin_id) WHERE origin_id IS NOT NULL DO NOTHING`

/**
 * Whether a call a member sends as first recorded is one this server stored before and retention
 * pruned since (its cost kept in the rollups): older than what retention pruned, and the member
 * has a later call held here, which it sent after this one (a member sends its calls in id order).
 * Storing it again would count it twice. Retention keeps each member's last call
 * (../ledger/retention.ts, KEEPS_MEMBERS_LAST), so a member whose other calls were all pruned is
 * still told from one sending an old backlog for the first time, whose calls are stored.
 */
async function prunedSince(tx: SqlStore, rows: readonly IngestRow[]): Promise<(row: IngestRow) => boolean> {
  // PostgreSQL: read under a share lock of the row a prune step locks first (../ledger/pg/pg-ledger.ts),
  // so a step under way on another instance is waited for and its time read; read before it, a
  // call it was deleting was inserted again once it committed (its cost counted twice).
  const lock = tx.dialect === 'postgres' ? ' FOR SHARE' : ''
  const before = (await tx.get<{ t: number }>(`SELECT pruned_before AS t FROM retention_state WHERE id = 1${lock}`))?.t ?? 0
  if (!rows.some((r) => r.record.ts < before)) return () => false
  const latest = new Map<string, number>()
  for (const member of new Set(rows.map((r) => r.record.member ?? ''))) {
    latest.set(member, (await tx.get<{ id: number | null }>('SELECT max(origin_id) AS id FROM calls WHERE member = @member AND origin_id IS NOT NULL', { member }))?.id ?? 0)
  }
  return (r) => r.record.ts < before && r.origin_id < (latest.get(r.record.member ?? '') ?? 0)
}

/** What the team server holds of a call a member sent before: what it is counted by (as re-pricing moves it), and what a revision may change. */
interface Held extends Omit<MovedCall, 'requested_model'> {
  origin_id: number
  cost_usd: number
  input_tokens: number
  output_tokens: number
  cache_read_tokens: number
  cache_write_tokens: number
  revision: number | null
  superseded_by: number | null
}

const HELD_COLUMNS = `id, origin_id, ts, provider, model, api_key_hash, tenant, agent, session, project, member, billing, source, cost_usd,
  input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, revision, superseded_by`

const HELD_SQL = `SELECT ${HELD_COLUMNS} FROM calls WHERE member = @member AND origin_id = @origin_id`

/**
 * A newer revision replaces what may change after a call was recorded: its tokens, cost and flags,
 * and an imported call's provider and billing (re-classed as a plan's: reclassed below).
 */
const REVISE_SQL = `UPDATE calls SET input_tokens = @input_tokens, output_tokens = @output_tokens, cache_read_tokens = @cache_read_tokens,
  cache_write_tokens = @cache_write_tokens, reasoning_tokens = @reasoning_tokens, cost_usd = @cost_usd, priced = @priced,
  estimated = @estimated, revision = @revision, provider = @provider, billing = @billing WHERE id = @id`

/**
 * Whether `r` is the member's imported call `held` re-classed as a plan's (its log named the plan
 * after the call was imported as money: ../import/grown.ts), its provider the plan's: the same
 * call, not another under a reused id.
 */
function reclassed(held: Held, r: CallRecord): boolean {
  return held.source === 'import' && r.source === 'import' && held.billing !== 'subscription' && r.billing === 'subscription'
}

/**
 * What a call sent again under an id the member used before is: a newer revision of the same call
 * (the same time, provider and model; its cost or tokens changed on the member), the same call
 * again (a resend, or an older revision arriving late, or the call re-priced since but sent as
 * first recorded; for a call re-classed here, an older revision of it as money), or a different
 * call (another time, provider or model: the member's ledger started again, a clash).
 */
function judge(held: Held, row: IngestRow): 'revise' | 'duplicate' | 'clash' {
  const r = row.record
  const heldRevision = held.revision ?? 0
  if (held.ts !== r.ts || held.model !== r.model) return 'clash'
  if (held.provider !== r.provider && !reclassed(held, r)) {
    // An older revision of a call re-classed here, as the money it was, arriving late (a resend):
    // the same call, whose re-class stays (builds before this one refused it as a clash).
    const beforeReclass = held.source === 'import' && r.source === 'import' && held.billing === 'subscription' && r.billing !== 'subscription'
    return beforeReclass && row.revision < heldRevision ? 'duplicate' : 'clash'
  }
  // The same call to the millisecond (another call under a reused id is at another time): with
  // another cost, sent again as first recorded after it was re-priced on the member (the first
  // answer lost). What is held stays until the member's revision of it comes (its own number).
  if (row.revision > heldRevision) return 'revise'
  return 'duplicate'
}

/**
 * An imported call the member's proxy superseded (it sent `superseded_by`) is no request here
 * either: it names this server's copy of the member's proxied call (0 while that is not here),
 * and the rollups that counted it move by one request less (`counted`: they did).
 */
async function superseded(tx: SqlStore, row: IngestRow, counted: Omit<MovedCall, 'id' | 'requested_model'> = countedOf(row.record)): Promise<CostChange | null> {
  if (row.superseded_by === null) return null
  const member = row.record.member ?? ''
  const changed = await tx.run(
    `UPDATE calls SET superseded_by = coalesce((SELECT t.id FROM calls t WHERE t.member = @member AND t.origin_id = @twin), 0)
      WHERE member = @member AND origin_id = @origin_id AND superseded_by IS NULL`,
    { member, twin: row.superseded_by, origin_id: row.origin_id },
  )
  return changed === 0 ? null : { ...costChangeOf(counted, 0), requests: -1, source: row.record.source }
}

/** What an ingested call is counted by in the rollups, as stored. */
function countedOf(r: CallRecord): Omit<MovedCall, 'id' | 'requested_model'> {
  return { ...r, project: r.project ?? '', member: r.member ?? '', billing: r.billing ?? 'api' }
}

/**
 * Replaces the held call with its newer revision, and says what that moves in the rollups: the
 * difference, or, re-classed (another provider or billing), the call as held out of them and the
 * revision into them.
 */
async function revise(tx: SqlStore, held: Held, row: IngestRow): Promise<CostChange[]> {
  const r = row.record
  // Only a re-class moves its provider and billing: any other revision is of what it was recorded as.
  const re = reclassed(held, r)
  await tx.run(REVISE_SQL, {
    id: held.id,
    input_tokens: r.input_tokens,
    output_tokens: r.output_tokens,
    cache_read_tokens: r.cache_read_tokens,
    cache_write_tokens: r.cache_write_tokens,
    reasoning_tokens: r.reasoning_tokens,
    cost_usd: r.cost_usd,
    priced: r.priced ? 1 : 0,
    estimated: r.estimated ? 1 : 0,
    revision: row.revision,
    provider: re ? r.provider : held.provider,
    billing: re ? 'subscription' : held.billing,
  })
  if (re) {
    const now = countedOf(r)
    return [
      { ...costChangeOf(held, -held.cost_usd, { input_tokens: -held.input_tokens, output_tokens: -held.output_tokens, cache_read_tokens: -held.cache_read_tokens, cache_write_tokens: -held.cache_write_tokens }), requests: -1, source: held.source },
      { ...costChangeOf({ ...held, provider: now.provider, billing: now.billing }, r.cost_usd, { input_tokens: r.input_tokens, output_tokens: r.output_tokens, cache_read_tokens: r.cache_read_tokens, cache_write_tokens: r.cache_write_tokens }), requests: 1, source: held.source },
    ]
  }
  return [costChangeOf(held, r.cost_usd - held.cost_usd, {
    input_tokens: r.input_tokens - held.input_tokens,
    output_tokens: r.output_tokens - held.output_tokens,
    cache_read_tokens: r.cache_read_tokens - held.cache_read_tokens,
    cache_write_tokens: r.cache_write_tokens - held.cache_write_tokens,
  })]
}

/** Folds freshly stored calls into the dashboard's rollups, inside the same transaction. */
export type FoldRollups = (tx: SqlStore, rows: readonly CallRecord[]) => Promise<void>

export interface Stored {
  /** Calls stored now. */
  stored: CallRecord[]
  /**
   * Calls whose id this member already used for a different call (another time, model or
   * cost): not a resend but a sender whose ledger started again (a new data folder under the
   * same token). Not stored, and not counted as duplicates, so the loss is said out loud.
   */
  clashes: IngestRow[]
  /** Calls held before whose newer revision replaced them (their rollups moved in the same transaction). */
  revised: IngestRow[]
}

/**
 * Stores a batch of ingested calls and their rollups in one transaction: either all of the new
 * ones are stored and counted (and the newer revisions replace what was held), or (the database
 * refused) none is and the sender tries again. The calls neither stored, revised nor clashing
 * were duplicates.
 */
export async function storeIngested(store: SqlStore, rows: readonly IngestRow[], fold: FoldRollups): Promise<Stored> {
  if (rows.length === 0) return { stored: [], clashes: [], revised: [] }
  return store.transaction(async (tx) => {
    const out: Stored = { stored: [], clashes: [], revised: [] }
    const changes: CostChange[] = []
    const pruned = await prunedSince(tx, rows)
    const twin = await heldBatchTwins(tx, rows)
    for (const row of rows) {
      const { origin_id, record } = row
      // A revision only replaces a call held here; one not held (pruned by retention, its cost
      // kept in the rollups) is not stored again, which would count it twice. So for a call sent
      // again as first recorded (a new team.url starts from the member's first call), and for a
      // Batch API request another member sent already (./batch-twins.ts).
      if (row.revision === 0 && !pruned(row) && !twin(row)) {
        const params: Record<string, unknown> = { origin_id, revision: null }
        for (const c of CALL_COLUMNS) params[c] = record[c]
        if ((await tx.run(INSERT_INGESTED_SQL, params)) === 1) {
          out.stored.push(record)
          // Folded below as a request, then moved by one less (after the fold: `changes`).
          const gone = await superseded(tx, row)
          if (gone) changes.push(gone)
          continue
        }
      }
      const held = await tx.get<Held>(HELD_SQL, { member: record.member, origin_id })
      if (!held) continue
      const verdict = judge(held, row)
      if (verdict === 'clash') out.clashes.push(row)
      else if (verdict === 'revise') {
        changes.push(...(await revise(tx, held, row)))
        const gone = await superseded(tx, row, held)
        if (gone) changes.push(gone)
        out.revised.push(row)
      }
    }
    if (out.stored.length > 0) await fold(tx, out.stored)
    // The held calls are in the rollups already (folded when they were stored): they move by the difference.
    await adjustRollups(tx, changes)
    return out
  })
}

/**
 * PostgreSQL: the same batch in one statement (`unnest`, one array per column), keyed on the
 * unique index `calls_origin (member, origin_id)`; RETURNING names the rows this statement
 * inserted, and exactly those go into the rollups, in the same transaction. Two team instances
 * taking the same batch at once: the second's insert waits on the first's index entries and,
 * once it commits, inserts (and counts) nothing. Rows go in by id, so two overlapping batches
 * lock their entries in one order and never wait on each other in a cycle.
 */
export const PG_INSERT_INGESTED_SQL = `INSERT INTO calls (${COLUMNS.join(', ')})
  SELECT * FROM unnest(${CALL_COLUMNS.map((c) => `@${c}::${PG_TYPES[c]}[]`).join(', ')}, @origin_id::bigint[], @revision::bigint[])
  ON CONFLICT (member, origin_id) WHERE origin_id IS NOT NULL DO NOTHING
  RETURNING id, origin_id`

// Locked: two team instances taking the same revision at once replace the call (and move its rollups) once.
const PG_HELD_SQL = `SELECT ${HELD_COLUMNS} FROM calls WHERE member = @member AND origin_id = ANY(@ids::bigint[]) ORDER BY id FOR UPDATE`

export async function storeIngestedPg(store: SqlStore, rows: readonly IngestRow[]): Promise<Stored> {
  if (rows.length === 0) return { stored: [], clashes: [], revised: [] }
  const byId = [...rows].sort((a, b) => a.origin_id - b.origin_id).map((r) => ({ ...r, record: pgSafe(r.record) }))
  const member = byId[0].record.member ?? ''
  // A deadlock or serialization failure rolled the transaction back whole: it goes again.
  return retryOnConflict(() =>
    store.transaction(async (tx) => {
      // First thing: a copy of one of its batch results another instance is storing now is waited for (./batch-twins.ts).
      await lockBatchTwins(tx, byId)
      // Calls as first sent are inserted (not one retention pruned here, sent again, nor a batch
      // request another member sent); a revision
      // only replaces a call held here (as storeIngested).
      const pruned = await prunedSince(tx, byId)
      const twin = await heldBatchTwins(tx, byId)
      const fresh = byId.filter((r) => r.revision === 0 && !pruned(r) && !twin(r))
      const params: Record<string, unknown[]> = { origin_id: fresh.map((r) => r.origin_id), revision: fresh.map(() => null) }
      for (const c of CALL_COLUMNS) params[c] = new Array(fresh.length)
      const values: unknown[] = []
      fresh.forEach((r, i) => {
        callValues(r.record, values)
        CALL_COLUMNS.forEach((c, j) => (params[c][i] = values[j]))
      })
      const returned = fresh.length > 0 ? await tx.all<{ id: number; origin_id: number }>(PG_INSERT_INGESTED_SQL, params) : []
      const ids = new Map(returned.map((r) => [r.origin_id, r.id]))
      const stored: StoredCall[] = []
      const others: IngestRow[] = []
      for (const r of byId) {
        const id = ids.get(r.origin_id)
        if (id === undefined) others.push(r)
        else stored.push({ ...r.record, id })
      }
      await applyRollups(tx, stored)
      const clashes: IngestRow[] = []
      const revised: IngestRow[] = []
      // Stored already superseded on the member: folded above as a request, moved by one less.
      const gone: CostChange[] = []
      for (const r of byId) {
        if (r.superseded_by === null || !ids.has(r.origin_id)) continue
        const c = await superseded(tx, r)
        if (c) gone.push(c)
      }
      await adjustRollups(tx, gone)
      if (others.length > 0) {
        const held = await tx.all<Held>(PG_HELD_SQL, { member, ids: others.map((r) => r.origin_id) })
        const at = new Map(held.map((h) => [h.origin_id, h]))
        const changes: CostChange[] = []
        for (const r of others) {
          const h = at.get(r.origin_id)
          if (!h) continue
          const verdict = judge(h, r)
          if (verdict === 'clash') clashes.push(r)
          else if (verdict === 'revise') {
            changes.push(...(await revise(tx, h, r)))
            const c = await superseded(tx, r, h)
            if (c) changes.push(c)
            revised.push(r)
          }
        }
        await adjustRollups(tx, changes)
      }
      clashes.sort((a, b) => a.index - b.index)
      revised.sort((a, b) => a.index - b.index)
      return { stored, clashes, revised }
    }),
  )
}
