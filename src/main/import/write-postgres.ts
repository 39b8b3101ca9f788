import { createHash } from 'node:crypto'
import type Database from 'better-sqlite3'
import { publishCalls } from '../budgets/feed/publish'
import { answerKey, byAnswer, heldAnswers, isBatchAnswer, lockBatchAnswers } from '../batch/twins'
import { applyRollups } from '../dashboard/rollup/apply'
import { insertCalls } from '../ledger/pg/insert'
import type { CallRecord } from '../ledger/record'
import type { SqlStore } from '../storage/sql'
import type { Grown } from './grown'
import type { StoreStats, WriteOptions } from './importer'
import type { LoggedCall } from './types'
import { MATCH_BEFORE_MS, STORED_ROW_COLUMNS, type StoredRow, complete, rekeyer, storedAsMatch, toRecord, twinQuery } from './write-common'

/**
 * The key an imported call is stored under in PostgreSQL, derived from its import key alone:
 * the same logged call imported again (its local key lost, or the same logs read by a second
 * instance on the same database) hits the unique index on `call_key` and is stored once.
 */
export function importCallKey(key: string): string {
  return 'import:' + createHash('sha256').update(key, 'utf8').digest('hex')
}

/** Twins (proxied calls already in the ledger) looked at per logged call, nearest in time first. */
const TWIN_CANDIDATES = 20

/**
 * PostgreSQL: the ledger is the shared database. The proxied twin of a logged call is looked
 * for there, and claimed there (`import_claims`) once matched, so no other instance's log is
 * matched to it again; the import keys stay in this machine's file (`db`). New calls go in with their rollups in one transaction, each under
 * `importCallKey`, then their keys are kept locally. A call found stored under its call key (by
 * another instance reading the same log, or before a crash between the two) has its key kept with
 * that call's id, never 0: the log entry grown since, or later, moves that call (./grown.ts).
 */
export function postgresWriter(db: Database.Database, store: SqlStore) {
  const hasKey = db.prepare('SELECT 1 FROM import_keys WHERE key = ?').pluck()
  const keyCall = db.prepare('SELECT call_id FROM import_keys WHERE key = ?').pluck()
  const claimed = db.prepare('SELECT 1 FROM import_keys WHERE call_id = ?').pluck()
  // A key at 0 (an older Burnrate kept a call another instance stored first so) names no call: replaced.
  const addKey = db.prepare(
    'INSERT INTO import_keys (key, call_id) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET call_id = excluded.call_id WHERE import_keys.call_id = 0',
  )
  /** The call's keys, both (LoggedCall.alias), name the ledger call `id`. */
  const keep = (c: LoggedCall, id: number) => {
    addKey.run(c.key, id)
    if (c.alias) addKey.run(c.alias, id)
  }
  type Stored = StoredRow & { id: number }
  /**
   * The calls stored in PostgreSQL under the call keys of these logged calls' LoggedCall.storedAs
   * keys this file has not kept (another instance stored them, or this file lost its keys), by
   * call key: one query per file, and none for calls without them (all but a Codex fork's).
   */
  const byStoredAsKeys = async (calls: readonly LoggedCall[]): Promise<Map<string, Stored>> => {
    const keys = calls.flatMap((c) => (c.storedAs ?? []).filter((s) => !keyCall.get(s.key)).map((s) => importCallKey(s.key)))
    if (keys.length === 0) return new Map()
    const rows = await store.all<Stored & { call_key: string }>(`SELECT call_key, id, ${STORED_ROW_COLUMNS} FROM calls WHERE call_key = ANY(@keys::text[])`, {
      keys: [...new Set(keys)],
    })
    return new Map(rows.map((r) => [r.call_key, { ...r, id: Number(r.id) }]))
  }
  /**
   * The ledger call one of the call's LoggedCall.storedAs keys names, if one is this call: by this
   * file's key (a key at 0 names none), else by its call key (`others`, byStoredAsKeys).
   */
  const storedAs = async (c: LoggedCall, others: Map<string, Stored>): Promise<number | undefined> => {
    for (const s of c.storedAs ?? []) {
      const id = keyCall.get(s.key) as number | undefined
      if (id) {
        const row = await store.get<StoredRow>(`SELECT ${STORED_ROW_COLUMNS} FROM calls WHERE id = @id`, { id })
        if (storedAsMatch(row, s, c)) return id
        continue
      }
      // Not kept here: stored by another instance, or before this file's keys were lost (kept under its call key in PostgreSQL).
      const row = others.get(importCallKey(s.key))
      if (row && storedAsMatch(row, s, c)) return row.id
    }
    return undefined
  }
  const rekey = rekeyer(db)
  const local = {
    getFile: db.prepare('SELECT size, mtime_ms FROM import_files WHERE path = ?'),
    setFile: db.prepare(
      'INSERT INTO import_files (path, size, mtime_ms) VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms',
    ),
  }
  /** The first stored call of each of these provider response ids (one query per file, not per call). */
  const byResponseIds = async (calls: readonly LoggedCall[]): Promise<Map<string, number>> => {
    const ids = [...new Set(calls.map((c) => c.response_id).filter(Boolean))]
    if (ids.length === 0) return new Map()
    const rows = await store.all<{ response_id: string; id: number }>(
      // Never a call a team member's Burnrate sent (origin_id set): made on that member's machine, not logged on this one.
      "SELECT response_id, MIN(id) AS id FROM calls WHERE response_id = ANY(@ids::text[]) AND response_id <> '' AND origin_id IS NULL GROUP BY response_id",
      { ids },
    )
    return new Map(rows.map((r) => [r.response_id, r.id]))
  }
  /** The calls stored under these logged calls' call keys (either key, LoggedCall.alias), by logged key. */
  const byCallKeys = async (calls: readonly LoggedCall[]): Promise<Map<string, number>> => {
    const keys = calls.flatMap((c) => (c.alias ? [c.key, c.alias] : [c.key]))
    if (keys.length === 0) return new Map()
    const rows = await store.all<{ call_key: string; id: number }>('SELECT call_key, id FROM calls WHERE call_key = ANY(@keys::text[])', {
      keys: keys.map(importCallKey),
    })
    const ids = new Map(rows.map((r) => [r.call_key, r.id]))
    const out = new Map<string, number>()
    for (const c of calls) {
      const id = ids.get(importCallKey(c.key)) ?? (c.alias ? ids.get(importCallKey(c.alias)) : undefined)
      if (id !== undefined) out.set(c.key, id)
    }
    return out
  }
  /**
   * Calls another instance stored (their insert found the call key taken): their keys name that
   * call, and the usage read here, larger if the log grew since that instance read it, moves it.
   */
  const foundStored = async (calls: readonly LoggedCall[], grown: Grown[], stats: StoreStats) => {
    const ids = await byCallKeys(calls)
    const found: Grown[] = []
    for (const c of calls) {
      const id = ids.get(c.key)
      // Gone since (retention pruned it): nothing to move, and no key to keep.
      if (id === undefined) stats.duplicates++
      else found.push({ id, call: c })
    }
    db.transaction(() => {
      for (const f of found) keep(f.call, f.id)
    })()
    grown.push(...found)
  }
  /**
   * Whether the ledger call `id` is this logged call's twin to take: claimed by it now, or before
   * (by either of its keys, or one it was stored under before, LoggedCall.storedAs: the same log read by another instance, or before this file kept its
   * key). Claimed by another logged call, it is that one's: a proxied call is one call, and
   * another machine's call with the same counts is money of its own.
   */
  const claim = async (id: number, c: LoggedCall, row?: StoredRow): Promise<boolean> => {
    const mine = [importCallKey(c.key), c.alias ? importCallKey(c.alias) : '']
    // A key it may be stored under (LoggedCall.storedAs: a Codex fork's own call an earlier build claimed under its root's key), when the call is it.
    const was = (c.storedAs ?? []).filter((s) => s.session === undefined || storedAsMatch(row, s, c)).map((s) => importCallKey(s.key))
    const won = await store.get(
      'INSERT INTO import_claims (call_id, key, alias) VALUES (@id, @key, @alias) ON CONFLICT (call_id) DO NOTHING RETURNING call_id',
      { id, key: mine[0], alias: mine[1] },
    )
    if (won) return true
    // Read in a statement of its own: a claim committed while the insert waited for it is seen.
    const by = await store.get<{ key: string; alias: string }>('SELECT key, alias FROM import_claims WHERE call_id = @id', { id })
    return !!by && [by.key, by.alias].some((k) => k !== '' && (mine.includes(k) || was.includes(k)))
  }
  const twinOf = async (c: LoggedCall, byResponse: Map<string, number>): Promise<number | undefined> => {
    const same = c.response_id ? byResponse.get(c.response_id) : undefined
    // The same answer's id: its twin whoever claimed it (claimed too, so no log is matched to it by its counts).
    if (same !== undefined) await claim(same, c)
    if (same !== undefined || c.matchByIdOnly) return same
    const near = await store.all<StoredRow & { id: number }>(
      `SELECT id, ${STORED_ROW_COLUMNS} FROM calls
        WHERE ts >= @from AND ts <= @to AND source = 'proxy' AND origin_id IS NULL AND provider IN (@provider, @alias, @alias2, @alias3) AND status < 400
          AND input_tokens = @input AND output_tokens = @output
          AND (@rid = '' OR response_id IS NULL OR response_id = '' OR response_id = @rid)
        ORDER BY abs(ts - @ts), id LIMIT ${TWIN_CANDIDATES}`,
      twinQuery(c),
    )
    // Not matched on this machine (before claims were shared, or by a key since superseded), and not another's.
    for (const r of near) if (!claimed.get(r.id) && (await claim(r.id, c, r))) return r.id
    return undefined
  }
  return {
    ...local,
    async write(calls: LoggedCall[], opts: WriteOptions, stats: StoreStats) {
      const fresh: { logged: LoggedCall; call: CallRecord }[] = []
      const inBatch = new Set<string>()
      const grown: Grown[] = []
      /** Known by a key an older Burnrate kept at 0: the call is looked for by its call key. */
      const lost: LoggedCall[] = []
      const byResponse = await byResponseIds(calls.filter((c) => !hasKey.get(c.key)))
      const others = await byStoredAsKeys(calls)
      // As on SQLite: what retention pruned cannot be matched any more (its rollups still count it).
      const pruned = (await store.get<{ t: number }>('SELECT pruned_before AS t FROM retention_state WHERE id = 1'))?.t ?? 0
      for (const c of calls) {
        if (inBatch.has(c.key) || (c.alias && inBatch.has(c.alias))) {
          stats.duplicates++
          continue
        }
        const copy = await storedAs(c, others)
        if (copy !== undefined) {
          grown.push({ id: copy, call: c })
          continue
        }
        const known = (keyCall.get(c.key) ?? (c.alias ? keyCall.get(c.alias) : undefined)) as number | undefined
        if (known === 0) {
          lost.push(c)
          continue
        }
        if (known !== undefined) {
          // Its usage may have grown since (completeImported below): else nothing to do.
          if (c.alias) keep(c, known)
          grown.push({ id: known, call: c })
          continue
        }
        // Its proxied twin, up to MATCH_BEFORE_MS earlier (the proxy stamps a call when it arrives, the
        // agent logs it once answered), may be among the pruned calls: not imported, as older ones.
        if (c.ts - MATCH_BEFORE_MS < pruned) {
          stats.expired++
          continue
        }
        const twin = await twinOf(c, byResponse)
        if (twin !== undefined) {
          keep(c, twin)
          stats.matched++
          continue
        }
        inBatch.add(c.key)
        if (c.alias) inBatch.add(c.alias)
        fresh.push({ logged: c, call: { ...toRecord(c, opts), call_key: importCallKey(c.key) } })
      }
      if (lost.length) await foundStored(lost, grown, stats)
      await complete(store, grown, opts, stats, rekey)
      if (fresh.length === 0) return
      let kept = fresh
      /** Batch API requests whose answer another instance or a team member stored meanwhile, and that call's id. */
      let twins: { logged: LoggedCall; id: number }[] = []
      const stored = await store.transaction(async (tx) => {
        // First thing (../batch/twins.ts): a copy of one of these batch answers another instance is
        // storing now (a team member's, sent to it; its own proxy's) is waited for, and seen below.
        const answers = fresh.filter((f) => isBatchAnswer(f.call)).map((f) => f.call.response_id!)
        await lockBatchAnswers(tx, answers)
        kept = fresh
        twins = []
        if (answers.length > 0) {
          const held = byAnswer(await heldAnswers(tx, answers))
          kept = fresh.filter((f) => {
            const twin = isBatchAnswer(f.call) ? held.get(answerKey({ ...f.call, response_id: f.call.response_id!, endpoint: f.call.endpoint ?? '' }))?.[0] : undefined
            if (twin) twins.push({ logged: f.logged, id: Number(twin.id) })
            return !twin
          })
        }
        const unmatched = kept
        // Read again under a share lock of the row a prune step locks first (../ledger/pg/pg-ledger.ts):
        // a step another instance committed since `pruned` was read, deleting a twin before it was
        // looked for, or one under way (waited for), is seen, and what it made too old is not stored
        // (it would be counted twice: the rollups keep what retention pruned).
        const now = (await tx.get<{ t: number }>('SELECT pruned_before AS t FROM retention_state WHERE id = 1 FOR SHARE'))?.t ?? 0
        if (now > pruned) kept = unmatched.filter((f) => f.logged.ts - MATCH_BEFORE_MS >= now)
        if (kept.length === 0) return []
        const s = await insertCalls(tx, kept.map((f) => f.call))
        // The other instances' meters count them as soon as this commits (PostgreSQL only; it locks nothing).
        await publishCalls(tx, store, s)
        // Spend rows before rollups: the order a ledger batch locks them in.
        await opts.countSpend?.(tx, s)
        await applyRollups(tx, s)
        return s
      })
      stats.expired += fresh.length - twins.length - kept.length
      stats.matched += twins.length
      // Counted as soon as they are committed, before their keys are kept in the local file: should
      // that write fail (the file locked a moment too long), a write tried again finds them in
      // PostgreSQL, by call key or response id, as recorded before, and counts them no more.
      for (const r of stored) {
        stats.imported++
        stats.cost_usd += r.cost_usd
        opts.onCall?.(r)
      }
      const ids = new Map(stored.map((r) => [r.call_key, r.id]))
      db.transaction(() => {
        for (const t of twins) keep(t.logged, t.id)
        for (const f of kept) {
          const id = ids.get(f.call.call_key)
          if (id !== undefined) keep(f.logged, id)
        }
      })()
      const taken = kept.filter((f) => !ids.has(f.call.call_key)).map((f) => f.logged)
      if (taken.length === 0) return
      const late: Grown[] = []
      await foundStored(taken, late, stats)
      await complete(store, late, opts, stats, rekey)
    },
  }
}
