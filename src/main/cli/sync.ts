import type Database from 'better-sqlite3'
import type { Config } from '../config/schema'
import type { ImportStats } from '../import/importer'
import type { SqlStore } from '../storage/sql'
import { LOG_AGENTS } from '../import/types'
import { unreadableNote } from '../import/walk'
import type { CliContext } from './context'
import { serverRunning, type TargetOptions } from './target'

/** While a server runs, logged calls this recent wait for a later import: the proxy may still be recording the same answer. */
export const SETTLE_WHILE_SERVING_MS = 10 * 60_000

/**
 * Brings the ledger up to date with every agent's standard log folder before a local report:
 * history from before Burnrate, and calls that bypassed it. Quick when nothing changed
 * (unchanged files are not read). Says on stderr what it added.
 */
/**
 * `store`: the ledger's PostgreSQL store (storage.url), where imported calls then go. `o`: the
 * command's options; with `--local` a server may still run beside it (see serverRunning).
 */
export async function syncLogs(db: Database.Database, config: Config, ctx: CliContext, o: TargetOptions, store?: SqlStore): Promise<ImportStats[]> {
  const { importLogs } = await import('../import/importer')
  const { localPricer } = await import('../pricing/local')
  const { spendCounter, spendMover } = await import('../budgets/state/pg/call-spend')
  // As a server on this data folder prices: its runtime prices and its cached newer price data.
  const pricer = localPricer(config, db)
  const out: ImportStats[] = []
  // PostgreSQL: imported calls also count in the shared budget spend rows (the config's periods).
  const target = store?.dialect === 'postgres' ? { store, countSpend: spendCounter(config), moveSpend: spendMover(config) } : {}
  // A server on the same file (`--local` beside it, or one holding the folder that did not answer
  // in time: busy, at its connection limit) counts them within seconds: notices, as `burnrate import` leaves.
  const settleMs = (await serverRunning(o, ctx)) ? SETTLE_WHILE_SERVING_MS : 0
  for (const agent of LOG_AGENTS) out.push(await importLogs(db, { agent, pricer, env: ctx.env, settleMs, announce: true, ...target }))
  const added = out.reduce((n, s) => n + s.imported, 0)
  if (added > 0) {
    const from = out.filter((s) => s.imported > 0).map((s) => `${s.imported} from ${s.agent}`).join(', ')
    ctx.stderr.write(`burnrate: imported ${added} calls from the agents' logs (${from})\n`)
  }
  // Not silent: the report would be short of their calls.
  for (const s of out) if (s.unreadable.length) ctx.stderr.write(`burnrate: ${unreadableNote(s)}\n`)
  return out
}
