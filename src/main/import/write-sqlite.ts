import type Database from 'better-sqlite3'
import { RollupWriter } from '../dashboard/rollup/writer'
import { INSERT_CALL_SQL, callValues } from '../ledger/columns'
import { noticeWriter } from '../ledger/notices'
import type { CallRecord } from '../ledger/record'
import { prunedBefore } from '../ledger/retention'
import { SqliteStore } from '../storage/sqlite'
import { isBatchAnswer } from '../batch/twins'
import type { Grown } from './grown'
import type { StoreStats, WriteOptions } from './importer'
import type { LoggedCall } from './types'
import { MATCH_BEFORE_MS, STORED_ROW_COLUMNS, type StoredRow, complete, rekeyer, storedAsMatch, toRecord, twinQuery } from './write-common'

/**
 * SQLite: the ledger is this machine's file. A logged call's proxied twin is looked for there,
 * and the new calls go in with their rollups and import keys in one transaction.
 */
export function sqliteWriter(db: Database.Database) {
  const insert = db.prepare(INSERT_CALL_SQL)
  const keyCall = db.prepare('SELECT call_id FROM import_keys WHERE key = ?').pluck()
  const addKey = db.prepare('INSERT INTO import_keys (key, call_id) VALUES (?, ?) ON CONFLICT (key) DO NOTHING')
  /** The call's keys, both (LoggedCall.alias), name the ledger call `id`. */
  const keep = (c: LoggedCall, id: number) => {
    addKey.run(c.key, id)
    if (c.alias) addKey.run(c.alias, id)
  }
  const rowOf = db.prepare(`SELECT ${STORED_ROW_COLUMNS} FROM calls WHERE id = ?`)
  /** The ledger call one of the call's LoggedCall.storedAs keys names, if one is this call. */
  const storedAs = (c: LoggedCall): number | undefined => {
    for (const s of c.storedAs ?? []) {
      const id = keyCall.get(s.key) as number | undefined
      if (id !== undefined && storedAsMatch(rowOf.get(id) as StoredRow | undefined, s, c)) return id
    }
    return undefined
  }
  const byResponseId = db
    // Never a call a team member's Burnrate sent (origin_id set): made on that member's machine, not logged on this one.
    .prepare("SELECT id FROM calls WHERE response_id = ? AND response_id <> '' AND origin_id IS NULL ORDER BY id LIMIT 1")
    .pluck()
  // A Batch API request's answer stored already, a team member's copy too (a team server: the member
  // read the same results file and sent its requests first): the same answer (../batch/twins.ts).
  const byAnswer = db
    .prepare(
      `SELECT id FROM calls WHERE response_id = @rid AND response_id <> '' AND provider = @provider AND endpoint = @endpoint AND model = @model
        AND input_tokens = @input AND output_tokens = @output ORDER BY id LIMIT 1`,
    )
    .pluck()
  const byTokens = db
    .prepare(
      `SELECT id FROM calls INDEXED BY calls_ts
        WHERE ts >= @from AND ts <= @to AND source = 'proxy' AND origin_id IS NULL AND provider IN (@provider, @alias, @alias2, @alias3) AND status < 400
          AND input_tokens = @input AND output_tokens = @output
          AND (@rid = '' OR response_id IS NULL OR response_id = '' OR response_id = @rid)
          AND NOT EXISTS (SELECT 1 FROM import_keys k WHERE k.call_id = calls.id)
        ORDER BY abs(ts - @ts) LIMIT 1`,
    )
    .pluck()
  const rollups = new RollupWriter(db)
  const notice = noticeWriter(db)
  const values: unknown[] = []
  const store = new SqliteStore(db)
  const rekey = rekeyer(db)
  const write = db.transaction((calls: LoggedCall[], opts: WriteOptions, stats: StoreStats, grown: Grown[]) => {
    const rows: CallRecord[] = []
    const pruned = prunedBefore(db)
    for (const c of calls) {
      const copy = storedAs(c)
      if (copy !== undefined) {
        grown.push({ id: copy, call: c })
        continue
      }
      const known = (keyCall.get(c.key) ?? (c.alias ? keyCall.get(c.alias) : undefined)) as number | undefined
      if (known !== undefined) {
        // Its usage may have grown since (completeImported below): else nothing to do.
        if (c.alias) keep(c, known)
        grown.push({ id: known, call: c })
        continue
      }
      // Its proxied twin, up to MATCH_BEFORE_MS earlier (the proxy stamps a call when it arrives, the
      // agent logs it once answered), may be among the pruned calls: not imported, as older ones.
      // A Batch API request has no proxied twin, and its key, kept here for good, tells a read of
      // the same results file again: one read first however late is recorded (on PostgreSQL
      // another instance's keys are not here, so there it is not: ./write-postgres.ts).
      if (!c.matchByIdOnly && c.ts - MATCH_BEFORE_MS < pruned) {
        stats.expired++
        continue
      }
      const twin =
        (c.response_id && (byResponseId.get(c.response_id) as number | undefined)) ||
        (isBatchAnswer(c) &&
          (byAnswer.get({ rid: c.response_id, provider: c.provider, endpoint: c.endpoint, model: c.model, input: c.usage.input_tokens, output: c.usage.output_tokens }) as
            | number
            | undefined)) ||
        (!c.matchByIdOnly && byTokens.get(twinQuery(c)) as number | undefined)
      if (twin) {
        keep(c, twin)
        stats.matched++
        continue
      }
      const call = toRecord(c, opts)
      const id = Number(insert.run(callValues(call, values)).lastInsertRowid)
      keep(c, id)
      if (opts.announce) notice.added(id, call.cost_usd)
      rows.push(call)
      stats.imported++
      stats.cost_usd += call.cost_usd
    }
    if (rows.length) rollups.onBatch(rows)
    return rows
  })
  return {
    getFile: db.prepare('SELECT size, mtime_ms FROM import_files WHERE path = ?'),
    setFile: db.prepare(
      'INSERT INTO import_files (path, size, mtime_ms) VALUES (?, ?, ?) ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms',
    ),
    async write(calls: LoggedCall[], opts: WriteOptions, stats: StoreStats) {
      if (calls.length === 0) return
      const grown: Grown[] = []
      const rows = write(calls, opts, stats, grown) as CallRecord[]
      if (opts.onCall) for (const r of rows) opts.onCall(r)
      // A server beside moves its spend and meters by what grew (its notice, with the move). A
      // re-class leaves its notice whoever imports: a server's own watcher moves its spend itself
      // (the notice moves no money), but the notices of the call written before it, by a `burnrate
      // import` beside, are still to be read as the call was then (money), not as a plan's.
      const reclassed = opts.announce ? notice.reclassed : (id: number, _delta: number, was: string) => notice.reclassed(id, 0, was)
      await complete(store, grown, opts, stats, rekey, opts.announce ? notice.moved : undefined, reclassed)
    },
  }
}
