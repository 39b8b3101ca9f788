import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type Database from 'better-sqlite3'
import { prunedBefore } from '../ledger/retention'
import { RollupWriter } from '../dashboard/rollup/writer'
import { INSERT_CALL_SQL, callValues } from '../ledger/columns'
import type { CallRecord } from '../ledger/record'
import type { Pricer } from '../pricing/price'
import { LOG_SOURCES } from './sources'
import type { LogAgent, LoggedCall } from './types'

/** A proxied call is looked for this long before a logged call's time, and this long after (clocks differ a little). */
export const MATCH_BEFORE_MS = 15 * 60_000
export const MATCH_AFTER_MS = 60_000

export interface ImportOptions {
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
    agent: opts.agent, roots, missing: [], files: 0, unchanged: 0, imported: 0, matched: 0, duplicates: 0, skipped_lines: 0, deferred: 0, expired: 0, cost_usd: 0,
  }
  const q = statements(db)
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
      const seen = q.getFile.get(path) as { size: number; mtime_ms: number } | undefined
      if (seen && seen.size === st.size && seen.mtime_ms === st.mtimeMs) {
        stats.unchanged++
        continue
      }
      stats.files++
      const parsed = await source.read(path, root)
      stats.skipped_lines += parsed.skipped
      const ready = parsed.calls.filter((c) => c.ts <= now - (opts.settleMs ?? 0))
      const deferred = parsed.calls.length - ready.length
      stats.deferred += deferred
      q.write(ready, opts, stats)
      if (deferred === 0) q.setFile.run(path, st.size, st.mtimeMs)
    }
  }
  return stats
}

function statements(db: Database.Database) {
  const insert = db.prepare(INSERT_CALL_SQL)
  const hasKey = db.prepare('SELECT 1 FROM import_keys WHERE key = ?').pluck()
  const addKey = db.prepare('INSERT INTO import_keys (key, call_id) VALUES (?, ?)')
  const byResponseId = db
    .prepare("SELECT id FROM calls WHERE response_id = ? AND response_id <> '' ORDER BY id LIMIT 1")
    .pluck()
  const byTokens = db
    .prepare(
      `SELECT id FROM calls INDEXED BY calls_ts
        WHERE ts >= @from AND ts <= @to AND source = 'proxy' AND provider = @provider AND status < 400
          AND input_tokens = @input AND output_tokens = @output
          AND NOT EXISTS (SELECT 1 FROM import_keys k WHERE k.call_id = calls.id)
        ORDER BY abs(ts - @ts) LIMIT 1`,
    )
    .pluck()
  const rollups = new RollupWriter(db)
  const values: unknown[] = []
  const write = db.transaction((calls: LoggedCall[], opts: ImportOptions, stats: ImportStats) => {
    const rows: CallRecord[] = []
    const pruned = prunedBefore(db)
    for (const c of calls) {
      if (hasKey.get(c.key)) {
        stats.duplicates++
        continue
      }
      if (c.ts < pruned) {
        stats.expired++
        continue
      }
      const twin =
        (c.response_id && (byResponseId.get(c.response_id) as number | undefined)) ||
        (byTokens.get({
          from: c.ts - MATCH_BEFORE_MS, to: c.ts + MATCH_AFTER_MS, ts: c.ts, provider: c.provider,
          input: c.usage.input_tokens, output: c.usage.output_tokens,
        }) as number | undefined)
      if (twin) {
        addKey.run(c.key, twin)
        stats.matched++
        continue
      }
      const call = toRecord(c, opts)
      const id = Number(insert.run(callValues(call, values)).lastInsertRowid)
      addKey.run(c.key, id)
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
    write(calls: LoggedCall[], opts: ImportOptions, stats: ImportStats) {
      if (calls.length === 0) return
      const rows = write(calls, opts, stats) as CallRecord[]
      if (opts.onCall) for (const r of rows) opts.onCall(r)
    },
  }
}

function toRecord(c: LoggedCall, opts: ImportOptions): CallRecord {
  const u = c.usage
  const p = c.model ? opts.pricer.price(c.pricingId, c.provider, c.model, u, new Date(c.ts)) : { cost_usd: 0, priced: false }
  return {
    ts: c.ts,
    provider: c.provider,
    model: c.model,
    endpoint: c.endpoint,
    api_key_hash: '',
    key_hint: '',
    tenant: opts.tenant ?? '',
    agent: opts.agent,
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
    source: 'import',
    project: c.project,
  }
}
