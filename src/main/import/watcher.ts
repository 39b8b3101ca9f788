import type Database from 'better-sqlite3'
import type { BudgetMeters } from '../budgets/types'
import type { CallLedger as Ledger } from '../ledger/types'
import type { Logger } from '../log'
import type { Pricer } from '../pricing/price'
import { countStored, importLogs, type ImportStats, type ImportTarget } from './importer'
import { LOG_AGENTS } from './types'
import { unreadableNote } from './walk'

/** With the ledger in PostgreSQL, `store`, `countSpend` and `moveSpend` (see ImportTarget): imported calls go there. */
export type WatcherOptions = WatcherBase & ImportTarget

interface WatcherBase {
  db: Database.Database
  ledger: Ledger
  pricer: Pricer
  log: Logger
  /** How often the agents' log folders are looked at. */
  intervalMs?: number
  /** Logged calls younger than this wait (the proxy may still be recording the same answer). */
  settleMs?: number
  /** The server's budget meters, which imported calls (and their grown usage) count in at once (null until the budgets feature is in). */
  budgets?: () => Pick<BudgetMeters, 'observe' | 'adjust'> | null
  env?: NodeJS.ProcessEnv
  home?: string
}

export const WATCH_INTERVAL_MS = 30_000
export const WATCH_SETTLE_MS = 10 * 60_000

/**
 * Imports new entries of every agent's standard log folder as they appear (the desktop app
 * runs it; `import.watch` turns it off): calls of agents that bypass the proxy still show,
 * marked `source: "import"`. Polls (unchanged files are only stat()ed), one pass at a time; the
 * ledger is flushed first so the proxy's own calls are there to be matched (a pass they cannot be
 * stored for imports nothing: see pass), and what is added
 * counts in the spend budgets read.
 */
export class LogWatcher {
  private timer: NodeJS.Timeout | null = null
  private running: Promise<ImportStats[]> | null = null
  private stopped = false
  /** The logs each agent's last pass could not read, as last said in the log. */
  private readonly unreadable = new Map<string, string>()
  /** Whether the last pass was skipped because the proxy's calls could not be stored (said once until one is not). */
  private unstored = false

  constructor(private readonly o: WatcherOptions) {}

  start(): this {
    this.schedule(0)
    return this
  }

  private schedule(ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.timer = null
      void this.runOnce().finally(() => this.schedule(this.o.intervalMs ?? WATCH_INTERVAL_MS))
    }, ms)
    this.timer.unref?.()
  }

  /** One pass over every agent's folders (waits for a pass already under way). */
  runOnce(now?: number): Promise<ImportStats[]> {
    this.running ??= this.pass(now).finally(() => {
      this.running = null
    })
    return this.running
  }

  private async pass(now?: number): Promise<ImportStats[]> {
    const out: ImportStats[] = []
    const { ledger } = this.o
    for (const agent of LOG_AGENTS) {
      if (this.stopped) break
      try {
        // The proxy's own calls must be stored to be matched (PostgreSQL: written, not just under way).
        // Not stored (the SQLite file locked by another process, PostgreSQL away): a call made through
        // the proxy would be imported from its agent's log too (Codex, Gemini CLI and opencode log no
        // answer id to tell it by) and counted twice once the proxy's row lands. The pass waits for the next.
        if (!(this.o.store ? await ledger.flushed() : ledger.flush())) {
          if (!this.unstored) this.o.log.warn(`import: the proxy's calls could not be stored (${ledger.status.last_error ?? 'the database refused them'}); the agents' logs are read once they are`)
          this.unstored = true
          break
        }
        this.unstored = false
        const target: ImportTarget = this.o.store ? { store: this.o.store, countSpend: this.o.countSpend, moveSpend: this.o.moveSpend } : {}
        const s = await importLogs(this.o.db, {
          ...target,
          agent,
          pricer: this.o.pricer,
          settleMs: this.o.settleMs ?? WATCH_SETTLE_MS,
          env: this.o.env,
          home: this.o.home,
          now,
          onCall: countStored(ledger, () => this.o.budgets?.() ?? null),
          // A call imported before that took its larger usage: today's spend and the meters move with it.
          onMoved: (moves) => moves.publish(ledger, { meters: this.o.budgets?.() ?? null }),
        })
        if (s.imported > 0) this.o.log.info(`import: ${s.imported} calls from ${agent}'s logs`)
        // Said once per change, not at every pass (the same files stay unreadable until someone fixes them).
        const unreadable = s.unreadable.join('\n')
        if (unreadable !== (this.unreadable.get(agent) ?? '')) {
          this.unreadable.set(agent, unreadable)
          if (unreadable) this.o.log.warn(`import: ${unreadableNote(s)}`)
        }
        out.push(s)
      } catch (err) {
        // A busy database or an unreadable folder: tried again on the next pass.
        this.o.log.warn(`import: ${agent}'s logs: ${(err as Error).message}`)
      }
    }
    return out
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.running?.catch(() => {})
  }
}
