import { createHash } from 'node:crypto'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { publishCalls } from '../budgets/feed/publish'
import type { SpendCounter, SpendMover } from '../budgets/state/pg/call-spend'
import type { BudgetMeters } from '../budgets/types'
import type { CallLedger } from '../ledger/types'
import { applyRollups } from '../dashboard/rollup/apply'
import { prunedBefore } from '../ledger/retention'
import { RollupWriter } from '../dashboard/rollup/writer'
import { insertCalls } from '../ledger/pg/insert'
import type { SqlStore } from '../storage/sql'
import { SqliteStore } from '../storage/sqlite'
import type { CostMoves } from '../pricing/moves'
import { INSERT_CALL_SQL, callValues } from '../ledger/columns'
import type { CallRecord } from '../ledger/record'
import { noticeWriter } from '../ledger/notices'
import { usageExtra } from '../metering/usage-extra'
import type { Pricer } from '../pricing/price'
import { completeImported, type Grown } from './grown'
import { LOG_SOURCES } from './sources'
import type { LogAgent, LoggedCall } from './types'

/** A proxied call is looked for this long before a logged call's time, and this long after (clocks differ a little). */
export const MATCH_BEFORE_MS = 15 * 60_000
export const MATCH_AFTER_MS = 60_000

/**
 * Where imported calls go: this machine's file (neither field), or PostgreSQL (`storage.url`),
 * where they must also count in the shared budget spend rows, so both go together.
 */
export type ImportTarget =
  | { store?: undefined; countSpend?: undefined }
  | {
      /**
       * The ledger's store when it is PostgreSQL (`storage.url`): calls are matched against and
       * written there, and `db` (this machine's own file) keeps only the import keys and files.
       */
      store: SqlStore
      /** Counts the stored calls in the shared budget spend rows, in the transaction that stores them (`spendCounter(config)`). */
      countSpend: SpendCounter
      /** Moves them there when an imported call takes its larger usage (`spendMover(config)`; ./grown.ts). */
      moveSpend: SpendMover
    }

export type ImportOptions = ImportBase & ImportTarget

/** What storing calls needs of the options (importLogs, and storeCalls for a Batch API's requests). */
type WriteOptions = Pick<ImportBase, 'pricer' | 'tenant' | 'onCall' | 'onMoved' | 'announce'> & { agent?: string } & ImportTarget

interface ImportBase {
  agent: LogAgent
  /** Folders to read instead of the agent's standard ones. */
  paths?: string[]
  pricer: Pricer
  /** Tenant given to the imported calls ('' by default). */
  tenant?: string
  /**
   * Logged calls younger than this wait for a later run (the proxy may still be streaming the
   * same answer); their file is read again next time. 0 imports everything.
   */
  settleMs?: number
  env?: NodeJS.ProcessEnv
  home?: string
  now?: number
  /** Called for each call added to the ledger (the server adds it to its spend). */
  onCall?: (call: CallRecord) => void
  /**
   * Called once calls imported before took their larger usage (./grown.ts), committed: the
   * server moves its spend and meters by them (`moves.publish`).
   */
  onMoved?: (moves: CostMoves) => void
  /**
   * SQLite: leave a notice of each stored call, for a server running on the same file to count
   * (`burnrate import`; ../ledger/notices.ts). A server importing itself counts through `onCall`.
   */
  announce?: boolean
}

/** What storing calls counted (ImportStats' counts of calls). */
export type StoreStats = Pick<ImportStats, 'imported' | 'updated' | 'matched' | 'duplicates' | 'expired' | 'cost_usd'>

/**
 * Stores calls known from elsewhere than a proxied call's own answer (a Batch API's requests,
 * read from its results file) as imports are stored: each once, by its key (a second read of
 * the same file, or a second instance on the same PostgreSQL, adds nothing), priced, counted by
 * `onCall`, with their rollups.
 */
export async function storeCalls(db: Database.Database, calls: LoggedCall[], opts: WriteOptions): Promise<StoreStats> {
  const stats: StoreStats = { imported: 0, updated: 0, matched: 0, duplicates: 0, expired: 0, cost_usd: 0 }
  await opts.pricer.ready()
  await writerFor(db, opts).write(calls, opts, stats)
  return stats
}

/** This machine's SQLite file, or PostgreSQL when the ledger is there (ImportTarget). */
function writerFor(db: Database.Database, target: ImportTarget) {
  return target.store?.dialect === 'postgres' ? pgStatements(db, target.store) : statements(db)
}

/**
 * Counts a call stored another way than the proxy's own recording (imported, a batch's request)
 * where the server counts recorded calls: today's spend and, once the budgets feature is in,
 * the budget rules' meters (not only at the next restart or rule change: a `*` rule sees them).
 */
export function countStored(ledger: Pick<CallLedger, 'spend'>, budgets: () => Pick<BudgetMeters, 'observe'> | null): (call: CallRecord) => void {
  return (call) => {
    ledger.spend.addCall(call)
    budgets()?.observe(call)
  }
}

export interface ImportStats {
  agent: LogAgent
  /** The folders read, and those that do not exist. */
  roots: string[]
  missing: string[]
  /** Log files read, and files skipped because they did not change since the last import. */
  files: number
  unchanged: number
  /** Calls added to the ledger. */
  imported: number
  /**
   * Calls imported before whose log entry has grown since (an answer still being written when it
   * was read): their tokens and cost updated to the larger usage (./grown.ts).
   */
  updated: number
  /** Calls already in the ledger through the proxy (matched, not added). */
  matched: number
  /** Calls imported before (nothing done). */
  duplicates: number
  /** Lines that could not be read (malformed or truncated): skipped. */
  skipped_lines: number
  /** Calls too recent to import yet (see settleMs). */
  deferred: number
  /**
   * Calls older than what retention already pruned (`ledger.retention_days`): not imported, since
   * the proxied call each may repeat is gone and could not be matched (the rollups count it).
   */
  expired: number
  cost_usd: number
}

/**
 * Imports one agent's logs into the ledger: each logged model call once, priced like a proxied
 * call, `source: "import"`. Idempotent: a call already imported (same agent ids) is skipped, and
 * one that also went through the proxy is matched to that call instead of counted twice: by the
 * provider's response id where the log has it, else by provider, token counts and time.
 */
export async function importLogs(db: Database.Database, opts: ImportOptions): Promise<ImportStats> {
  const source = LOG_SOURCES[opts.agent]
  const now = opts.now ?? Date.now()
  const roots = opts.paths?.length ? opts.paths : source.defaultRoots(opts.env ?? process.env, opts.home ?? (await import('node:os')).homedir())
  const stats: ImportStats = {
    agent: opts.agent, roots, missing: [], files: 0, unchanged: 0, imported: 0, updated: 0, matched: 0, duplicates: 0, skipped_lines: 0, deferred: 0, expired: 0, cost_usd: 0,
  }
  // Every call is priced as it is stored.
  await opts.pricer.ready()
  const q = writerFor(db, opts)
  for (const root of roots) {
    let names: string[]
    try {
      names = (source.list ? await source.list(root) : (await readdir(root, { recursive: true })).map(String)).sort()
    } catch {
      stats.missing.push(root)
      continue
    }
    for (const name of names) {
      const path = join(root, name)
      if (!source.isLog(path)) continue
      let st
      try {
        st = await stat(path)
      } catch {
        continue
      }
      if (!st.isFile()) continue
      const stamp = await stampOf(st, source.companions?.(path) ?? [])
      const seen = q.getFile.get(path) as { size: number; mtime_ms: number } | undefined
      if (seen && seen.size === stamp.size && seen.mtime_ms === stamp.mtimeMs) {
        stats.unchanged++
        continue
      }
      stats.files++
      const parsed = await source.read(path, root)
      stats.skipped_lines += parsed.skipped
      const ready = parsed.calls.filter((c) => c.ts <= now - (opts.settleMs ?? 0))
      const deferred = parsed.calls.length - ready.length
      stats.deferred += deferred
      await q.write(ready, opts, stats)
      if (deferred === 0) q.setFile.run(path, stamp.size, stamp.mtimeMs)
    }
  }
  return stats
}

/**
 * What tells whether a log changed since the last import: its size and mtime, with its
 * companions' (a database's `-wal`) added in: their sizes summed, the latest mtime. A write to
 * either changes one of the two (a checkpoint moves rows from the -wal into the file: both change).
 */
async function stampOf(st: { size: number; mtimeMs: number }, companions: readonly string[]): Promise<{ size: number; mtimeMs: number }> {
  let { size, mtimeMs } = st
  for (const path of companions) {
    const c = await stat(path).catch(() => null)
    if (!c?.isFile()) continue
    size += c.size
    mtimeMs = Math.max(mtimeMs, c.mtimeMs)
  }
  return { size, mtimeMs }
}

/**
 * The provider a proxied twin may be recorded under besides the log's own: an agent logged in to
 * its vendor's plan goes through Burnrate to the plan's backend, which the proxy records as its
 * own provider (Codex with a ChatGPT login: `chatgpt`; Gemini CLI with a Google login:
 * `code-assist`), while the agent's log names the API's (`openai`, `gemini`).
 */
const TWIN_PROVIDER: Record<string, string> = { openai: 'chatgpt', gemini: 'code-assist' }

/**
 * What a proxied twin of a logged call is looked for by: the same counts near the same time,
 * from a proxied call of its provider (or the plan's, above). When the log names the answer's id
 * (Claude Code's message id), a proxied call that recorded another id is another call, whatever
 * its counts: only one that recorded none, or the same, can be its twin.
 */
function twinQuery(c: LoggedCall) {
  return {
    from: c.ts - MATCH_BEFORE_MS, to: c.ts + MATCH_AFTER_MS, ts: c.ts, provider: c.provider, alias: TWIN_PROVIDER[c.provider] ?? c.provider,
    input: c.usage.input_tokens, output: c.usage.output_tokens, rid: c.response_id ?? '',
  }
}

function statements(db: Database.Database) {
  const insert = db.prepare(INSERT_CALL_SQL)
  const keyCall = db.prepare('SELECT call_id FROM import_keys WHERE key = ?').pluck()
  const addKey = db.prepare('INSERT INTO import_keys (key, call_id) VALUES (?, ?)')
  const byResponseId = db
    .prepare("SELECT id FROM calls WHERE response_id = ? AND response_id <> '' ORDER BY id LIMIT 1")
    .pluck()
  const byTokens = db
    .prepare(
      `SELECT id FROM calls INDEXED BY calls_ts
        WHERE ts >= @from AND ts <= @to AND source = 'proxy' AND provider IN (@provider, @alias) AND status < 400
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
  const write = db.transaction((calls: LoggedCall[], opts: WriteOptions, stats: StoreStats, grown: Grown[]) => {
    const rows: CallRecord[] = []
    const pruned = prunedBefore(db)
    for (const c of calls) {
      const known = keyCall.get(c.key) as number | undefined
      if (known !== undefined) {
        // Its usage may have grown since (completeImported below): else nothing to do.
        grown.push({ id: known, call: c })
        continue
      }
      if (c.ts < pruned) {
        stats.expired++
        continue
      }
      const twin =
        (c.response_id && (byResponseId.get(c.response_id) as number | undefined)) ||
        (!c.matchByIdOnly && byTokens.get(twinQuery(c)) as number | undefined)
      if (twin) {
        addKey.run(c.key, twin)
        stats.matched++
        continue
      }
      const call = toRecord(c, opts)
      const id = Number(insert.run(callValues(call, values)).lastInsertRowid)
      addKey.run(c.key, id)
      if (opts.announce) notice(id)
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
      await complete(store, grown, opts, stats)
    },
  }
}

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
 * for there; the import keys stay in this machine's file (`db`), which also says which proxied
 * calls are already matched. New calls go in with their rollups in one transaction, each under
 * `importCallKey`, then their keys are kept locally (a crash between the two leaves the key
 * missing; the next import finds the call by its call key and counts it as a duplicate).
 */
function pgStatements(db: Database.Database, store: SqlStore) {
  const hasKey = db.prepare('SELECT 1 FROM import_keys WHERE key = ?').pluck()
  const keyCall = db.prepare('SELECT call_id FROM import_keys WHERE key = ?').pluck()
  const claimed = db.prepare('SELECT 1 FROM import_keys WHERE call_id = ?').pluck()
  const addKey = db.prepare('INSERT INTO import_keys (key, call_id) VALUES (?, ?) ON CONFLICT (key) DO NOTHING')
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
      "SELECT response_id, MIN(id) AS id FROM calls WHERE response_id = ANY(@ids::text[]) AND response_id <> '' GROUP BY response_id",
      { ids },
    )
    return new Map(rows.map((r) => [r.response_id, r.id]))
  }
  const twinOf = async (c: LoggedCall, byResponse: Map<string, number>): Promise<number | undefined> => {
    const same = c.response_id ? byResponse.get(c.response_id) : undefined
    if (same !== undefined || c.matchByIdOnly) return same
    const near = await store.all<{ id: number }>(
      `SELECT id FROM calls
        WHERE ts >= @from AND ts <= @to AND source = 'proxy' AND provider IN (@provider, @alias) AND status < 400
          AND input_tokens = @input AND output_tokens = @output
          AND (@rid = '' OR response_id IS NULL OR response_id = '' OR response_id = @rid)
        ORDER BY abs(ts - @ts), id LIMIT ${TWIN_CANDIDATES}`,
      twinQuery(c),
    )
    return near.find((r) => !claimed.get(r.id))?.id
  }
  return {
    ...local,
    async write(calls: LoggedCall[], opts: WriteOptions, stats: StoreStats) {
      const fresh: { key: string; call: CallRecord }[] = []
      const inBatch = new Set<string>()
      const grown: Grown[] = []
      const byResponse = await byResponseIds(calls.filter((c) => !hasKey.get(c.key)))
      // As on SQLite: what retention pruned cannot be matched any more (its rollups still count it).
      const pruned = (await store.get<{ t: number }>('SELECT pruned_before AS t FROM retention_state WHERE id = 1'))?.t ?? 0
      for (const c of calls) {
        if (inBatch.has(c.key)) {
          stats.duplicates++
          continue
        }
        const known = keyCall.get(c.key) as number | undefined
        if (known !== undefined) {
          // Its usage may have grown since (completeImported below): else nothing to do.
          grown.push({ id: known, call: c })
          continue
        }
        if (c.ts < pruned) {
          stats.expired++
          continue
        }
        const twin = await twinOf(c, byResponse)
        if (twin !== undefined) {
          addKey.run(c.key, twin)
          stats.matched++
          continue
        }
        inBatch.add(c.key)
        fresh.push({ key: c.key, call: { ...toRecord(c, opts), call_key: importCallKey(c.key) } })
      }
      await complete(store, grown, opts, stats)
      if (fresh.length === 0) return
      const stored = await store.transaction(async (tx) => {
        const s = await insertCalls(tx, fresh.map((f) => f.call))
        // The other instances' meters count them as soon as this commits (PostgreSQL only; it locks nothing).
        await publishCalls(tx, store, s)
        // Spend rows before rollups: the order a ledger batch locks them in.
        await opts.countSpend?.(tx, s)
        await applyRollups(tx, s)
        return s
      })
      const ids = new Map(stored.map((r) => [r.call_key, r.id]))
      db.transaction(() => {
        for (const f of fresh) addKey.run(f.key, ids.get(f.call.call_key) ?? 0)
      })()
      stats.duplicates += fresh.length - stored.length
      for (const r of stored) {
        stats.imported++
        stats.cost_usd += r.cost_usd
        opts.onCall?.(r)
      }
    },
  }
}

/** Calls imported before take a larger usage their log now gives (./grown.ts); the others were imported as they are. */
async function complete(store: SqlStore, grown: readonly Grown[], opts: WriteOptions, stats: StoreStats): Promise<void> {
  const done = await completeImported(store, grown, opts.pricer, opts.store ? opts.moveSpend : undefined)
  stats.duplicates += grown.length - (done?.updated ?? 0)
  if (!done) return
  stats.updated += done.updated
  stats.cost_usd += done.delta
  opts.onMoved?.(done.moves)
}

function toRecord(c: LoggedCall, opts: WriteOptions): CallRecord {
  const u = c.usage
  const p = c.model ? opts.pricer.price(c.pricingId, c.provider, c.model, u, new Date(c.ts)) : { cost_usd: 0, priced: false }
  return {
    ts: c.ts,
    provider: c.provider,
    model: c.model,
    endpoint: c.endpoint,
    api_key_hash: c.who?.api_key_hash ?? '',
    key_hint: c.who?.key_hint ?? '',
    tenant: c.who?.tenant ?? opts.tenant ?? '',
    agent: c.who?.agent ?? opts.agent ?? '',
    session: c.session,
    status: 200,
    streamed: false,
    input_tokens: u.input_tokens,
    output_tokens: u.output_tokens,
    cache_read_tokens: u.cache_read_tokens,
    cache_write_tokens: u.cache_write_tokens,
    cache_write_1h_tokens: u.cache_write_1h_tokens,
    reasoning_tokens: u.reasoning_tokens,
    cost_usd: p.cost_usd,
    priced: p.priced,
    estimated: false,
    latency_ms: 0,
    error: null,
    response_id: c.response_id,
    source: c.who?.source ?? 'import',
    billing: c.who?.billing ?? c.billing ?? 'api',
    project: c.project,
    // Claude Code's logs count web searches (server_tool_use): kept, so re-pricing charges them again.
    usage_extra: usageExtra(u),
  }
}
