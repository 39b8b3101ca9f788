import { emptyUsage } from '../metering/usage'
import { CostMoves, type MovedCall, type SpendTargets } from '../pricing/moves'
import { lockedRead, SET_USAGE, type StoredTokens, tokensGained, usageParams } from '../pricing/usage-taken'
import type { SqlStore } from '../storage/sql'

/*
 * An imported call whose answer the proxy recorded too (the same provider message id: a Claude
 * Code answer imported while one of its content blocks still streamed, past the import's wait)
 * gives way to the proxy's record: 0 tokens, $0, `superseded_by` naming that record, and no longer
 * a request. Its row stays (the audit trail; a team server may hold it). Only this Burnrate's own
 * calls: a team member's (`origin_id` set) are that member's to supersede, and it says so when it
 * sends them again (../team/store.ts). Done when the proxy
 * records the answer (./superseder.ts) and when the log is read again (./grown.ts), whichever
 * finds both first; the other finds it done.
 */

/** An imported call as read back: what it is counted by, its tokens and cost, and what identifies its answer. */
export interface ImportedRow extends MovedCall, StoredTokens {
  cost_usd: number
  response_id: string | null
  /** PostgreSQL: `import:` and the SHA-256 of its import key (./write-postgres.ts importCallKey). */
  call_key: string | null
  superseded_by: number | null
}

export const IMPORTED_COLUMNS = `id, ts, endpoint, provider, model, api_key_hash, tenant, agent, session, project, member, requested_model, billing,
  input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, response_id, call_key, superseded_by`

/** This Burnrate's imported calls with an answer id, not superseded yet (the partial index `calls_import_answer`). */
const OPEN = "source = 'import' AND response_id <> '' AND superseded_by IS NULL AND origin_id IS NULL"

/** A condition that `response_id` is one of `ids`, and its parameter `@ids`, in the store's dialect. */
function amongIds(store: SqlStore, ids: string[]): { among: string; ids: string[] | string } {
  return store.dialect === 'postgres' ? { among: '= ANY(@ids::text[])', ids } : { among: 'IN (SELECT value FROM json_each(@ids))', ids: JSON.stringify(ids) }
}

/** The proxy's record of answer `rid` (its first), if it has one. */
export async function proxiedTwin(tx: SqlStore, rid: string): Promise<number | undefined> {
  const twin = await tx.get<{ id: number }>("SELECT id FROM calls WHERE response_id = @rid AND response_id <> '' AND source = 'proxy' AND origin_id IS NULL ORDER BY id LIMIT 1", { rid })
  return twin?.id
}

/**
 * Imported call `row` (read back in `tx`, locked on PostgreSQL) gives way to `twin`: moved by minus
 * its cost and tokens and by one request less (`moves`). On PostgreSQL the twin is claimed by the
 * imported call's keys (`import_claims`, as a match claims it): no other instance's log is matched
 * to it by its counts, as if the log had been matched to it in the first place. False when another
 * writer changed the row since it was read.
 */
export async function supersede(tx: SqlStore, row: ImportedRow, twin: number, moves: CostMoves): Promise<boolean> {
  const changed = await tx.run(
    `UPDATE calls SET ${SET_USAGE}, superseded_by = @twin
      WHERE id = @id AND superseded_by IS NULL AND input_tokens = @wasInput AND output_tokens = @wasOutput AND cost_usd = @wasCost`,
    { id: row.id, twin, ...usageParams(emptyUsage(), 0, true), wasInput: row.input_tokens, wasOutput: row.output_tokens, wasCost: row.cost_usd },
  )
  if (changed === 0) return false
  // The key's newest call still a request (its last-seen time and tenant, as a restart reads them: KEYS_SQL).
  const latest = await tx.get<{ ts: number; tenant: string }>(
    'SELECT ts, tenant FROM calls WHERE api_key_hash = @key AND origin_id IS NULL AND superseded_by IS NULL ORDER BY ts DESC, id DESC LIMIT 1',
    { key: row.api_key_hash },
  )
  moves.add({ ...row, source: 'import' }, -row.cost_usd, tokensGained(row, emptyUsage()), { requests: -1, latest: latest ? { ts: Number(latest.ts), tenant: latest.tenant } : null })
  if (tx.dialect === 'postgres' && row.call_key) {
    await tx.run("INSERT INTO import_claims (call_id, key, alias) VALUES (@twin, @key, '') ON CONFLICT (call_id) DO NOTHING", { twin, key: row.call_key })
  }
  return true
}

/** Which of these answer ids have an imported call not superseded yet: one look-up in the partial index for all (most have none). */
export async function openImports(store: SqlStore, rids: readonly string[]): Promise<string[]> {
  const ids = [...new Set(rids)].filter(Boolean)
  if (ids.length === 0) return []
  const q = amongIds(store, ids)
  const rows = await store.all<{ rid: string }>(`SELECT DISTINCT response_id AS rid FROM calls WHERE response_id ${q.among} AND ${OPEN}`, { ids: q.ids })
  return rows.map((r) => r.rid)
}

/**
 * The answer ids after `after` (in order) that have an imported call not superseded yet, `limit`
 * at most (the partial index, walked a stretch at a time), and of them those the proxy recorded.
 */
export async function importsBeside(store: SqlStore, after: string, limit: number): Promise<{ last: string | null; proxied: string[] }> {
  const open = await store.all<{ rid: string }>(
    `SELECT DISTINCT response_id AS rid FROM calls
      WHERE response_id > @after AND ${OPEN} ORDER BY response_id LIMIT ${limit}`,
    { after },
  )
  if (open.length === 0) return { last: null, proxied: [] }
  const ids = open.map((r) => r.rid)
  const q = amongIds(store, ids)
  const proxied = await store.all<{ rid: string }>(`SELECT DISTINCT response_id AS rid FROM calls WHERE response_id ${q.among} AND source = 'proxy' AND origin_id IS NULL`, { ids: q.ids })
  return { last: ids[ids.length - 1], proxied: proxied.map((r) => r.rid) }
}

/** An imported call superseded, and the proxied call that superseded it. */
export interface Superseded {
  id: number
  twin: number
}

/**
 * The imported calls of these answers give way to the proxy's records of them, in one
 * transaction with what that moves (the rollups, PostgreSQL's shared spend rows and the other
 * instances' meters through the calls feed). Resolves to the moves, to publish once committed.
 */
export async function supersedeAnswers(store: SqlStore, rids: readonly string[], targets: Pick<SpendTargets, 'shared' | 'feedId'>): Promise<{ moves: CostMoves; superseded: Superseded[] } | null> {
  if (rids.length === 0) return null
  const out = await store.transaction(async (tx) => {
    const moves = await CostMoves.in(tx)
    const superseded: Superseded[] = []
    for (const rid of rids) {
      const twin = await proxiedTwin(tx, rid)
      if (twin === undefined) continue
      const rows = await tx.all<ImportedRow>(`SELECT ${IMPORTED_COLUMNS} FROM calls WHERE response_id = @rid AND ${OPEN} ORDER BY id${lockedRead(tx)}`, { rid })
      for (const row of rows) if (await supersede(tx, row, twin, moves)) superseded.push({ id: row.id, twin })
    }
    if (superseded.length > 0) await moves.apply(tx, targets)
    return { moves, superseded }
  })
  return out.superseded.length > 0 ? out : null
}
