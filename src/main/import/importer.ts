import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import type { SpendCounter, SpendMover } from '../budgets/state/pg/call-spend'
import type { BudgetMeters } from '../budgets/types'
import type { CallLedger } from '../ledger/types'
import type { SqlStore } from '../storage/sql'
import type { CostMoves } from '../pricing/moves'
import type { CallRecord } from '../ledger/record'
import type { Pricer } from '../pricing/price'
import { LOG_SOURCES } from './sources'
import type { LogAgent, LoggedCall, Parsed } from './types'
import { postgresWriter } from './write-postgres'
import { sqliteWriter } from './write-sqlite'
import { fsError, listFiles, vanished } from './walk'

export { MATCH_AFTER_MS, MATCH_BEFORE_MS } from './write-common'
export { importCallKey } from './write-postgres'

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
export type WriteOptions = Pick<ImportBase, 'pricer' | 'tenant' | 'onCall' | 'onMoved' | 'announce'> & { agent?: string } & ImportTarget

interface ImportBase {
  agent: LogAgent
  /** Folders to read instead of the agent's standard ones. */
  paths?: string[]
  pricer: Pricer
  /** Tenant given to the imported calls ('' by default). */
  tenant?: string
  /**
   * Logged calls whose latest line (LoggedCall.lastTs) is younger than this wait for a later run
   * (the proxy may still be streaming the same answer, and records it only when it ends); their
   * file is read again next time. 0 imports everything.
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
export type StoreStats = Pick<ImportStats, 'imported' | 'updated' | 'reclassed' | 'superseded' | 'matched' | 'duplicates' | 'expired' | 'cost_usd'>

/**
 * Stores calls known from elsewhere than a proxied call's own answer (a Batch API's requests,
 * read from its results file) as imports are stored: each once, by its key (a second read of
 * the same file, or a second instance on the same PostgreSQL, adds nothing), priced, counted by
 * `onCall`, with their rollups.
 */
export async function storeCalls(db: Database.Database, calls: LoggedCall[], opts: WriteOptions): Promise<StoreStats> {
  const stats: StoreStats = { imported: 0, updated: 0, reclassed: 0, superseded: 0, matched: 0, duplicates: 0, expired: 0, cost_usd: 0 }
  await opts.pricer.ready()
  await writerFor(db, opts).write(calls, opts, stats)
  return stats
}

/** This machine's SQLite file, or PostgreSQL when the ledger is there (ImportTarget). */
function writerFor(db: Database.Database, target: ImportTarget) {
  return target.store?.dialect === 'postgres' ? postgresWriter(db, target.store) : sqliteWriter(db)
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
  /**
   * Log files and folders below a root that could not be read (no permission: one `sudo` left
   * owned by root): skipped, the others imported; tried again at the next import.
   */
  unreadable: string[]
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
  /**
   * Calls imported before as money that a later line of their log names a plan's (a Codex session
   * whose plan an event after them named): now plan usage, as a first read stores them (./grown.ts).
   */
  reclassed: number
  /**
   * Calls imported before whose answer the proxy has recorded since (imported while it still
   * streamed): set to 0 tokens and $0, the proxy's record being the answer's (./grown.ts).
   */
  superseded: number
  /** Calls already in the ledger through the proxy (matched, not added). */
  matched: number
  /** Calls imported before (nothing done). */
  duplicates: number
  /** Lines that could not be read (malformed or truncated), and calls logged without a time that can be read: skipped. */
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
    agent: opts.agent, roots, missing: [], unreadable: [], files: 0, unchanged: 0, imported: 0, updated: 0, reclassed: 0, superseded: 0, matched: 0, duplicates: 0, skipped_lines: 0, deferred: 0, expired: 0, cost_usd: 0,
  }
  // Every call is priced as it is stored.
  await opts.pricer.ready()
  const q = writerFor(db, opts)
  // Every root's logs, then read in the source's order when it has one (Codex: oldest rollout first, whatever its folder).
  const logs: { root: string; path: string }[] = []
  for (const root of roots) {
    let names: string[]
    const unreadable = (path: string) => void stats.unreadable.push(path)
    try {
      names = (source.list ? await source.list(root, unreadable) : await listFiles(root, unreadable)).sort()
    } catch (err) {
      // A folder there that cannot be read (no permission) is named as such, never taken for one that is not there.
      if (fsError(err) && !vanished(err)) stats.unreadable.push(root)
      else stats.missing.push(root)
      continue
    }
    for (const name of names) {
      const path = join(root, name)
      if (source.isLog(path)) logs.push({ root, path })
    }
  }
  const order = source.readOrder
  if (order) logs.sort((a, b) => compare(order(a.path), order(b.path)))
  // A root's reader is opened at its first log that changed: a run with nothing new reads nothing else.
  const readers = new Map<string, (path: string) => Promise<Parsed>>()
  for (const { root, path } of logs) {
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
    let read = readers.get(root)
    if (!read) readers.set(root, (read = source.open ? await source.open(root) : (p) => source.read(p, root)))
    let parsed: Parsed
    try {
      parsed = await read(path)
    } catch (err) {
      // One log that cannot be read is that log not read, never the others (nor a report's).
      if (!fsError(err)) throw err
      if (!vanished(err)) stats.unreadable.push(path)
      continue
    }
    stats.skipped_lines += parsed.skipped
    // Counted from the call's latest line, not its first: an answer streaming for longer than the
    // wait has written lines for its first content blocks long before the proxy records it.
    const ready = parsed.calls.filter((c) => (c.lastTs ?? c.ts) <= now - (opts.settleMs ?? 0))
    const deferred = parsed.calls.length - ready.length
    stats.deferred += deferred
    await q.write(ready, opts, stats)
    if (deferred === 0) q.setFile.run(path, stamp.size, stamp.mtimeMs)
  }
  return stats
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

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
