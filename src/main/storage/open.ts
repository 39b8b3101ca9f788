import type Database from 'better-sqlite3'
import type { Config } from '../config/schema'
import { Ledger } from '../ledger/ledger'
import { spendCounter } from '../budgets/state/pg/call-spend'
import { publishCalls } from '../budgets/feed/publish'
import { PgLedger } from '../ledger/pg/pg-ledger'
import type { CallLedger } from '../ledger/types'
import type { Logger } from '../log'
import { PostgresStore } from './postgres'
import type { SqlStore } from './sql'
import { passwordOf, redactUrl } from './url'
import { SqliteStore } from './sqlite'
import { writeSpilledSide } from './spilled-side'

/** The shared store and the ledger that writes it, as the server composes them. */
export interface Storage {
  store: SqlStore
  ledger: CallLedger
  /** The `storage` section of `/api/health` (null for the embedded SQLite file, which `ledger` already covers). */
  health: (() => unknown) | null
  /** Closes the shared store (after the ledger is closed); the SQLite file belongs to the server. */
  close(): Promise<void>
}

export interface OpenOptions {
  log: Logger
  /** The built SQLite ledger write thread (see LedgerOptions.writeThread). */
  ledgerWorker?: URL | string
  /** How long the write thread may sit idle before it ends (see LedgerOptions.threadIdleMs). */
  ledgerThreadIdleMs?: number
}

/**
 * Without `storage.url`: the data folder's SQLite file is the store and the ledger writes it.
 * With it: PostgreSQL is the store (every ledger read and write), and `db` stays this instance's
 * own file for what is local to it. PostgreSQL need not answer at start-up: the ledger migrates
 * it, writes what earlier runs spilled and loads the spend as soon as it does, and meanwhile
 * holds and spills calls (start-up never waits on the network, and no call is refused for it).
 */
export function openStorage(config: Config, db: Database.Database, opts: OpenOptions): Storage {
  const ledgerOpts = {
    flushIntervalMs: config.ledger.flush_interval_ms,
    maxPending: config.ledger.max_pending,
    timezone: config.timezone,
  }
  const url = config.storage.url
  if (!url) {
    return {
      store: new SqliteStore(db),
      ledger: new Ledger(db, { ...ledgerOpts, writeThread: opts.ledgerWorker, threadIdleMs: opts.ledgerThreadIdleMs, journalDir: config.data_dir, log: opts.log }),
      health: null,
      close: async () => {},
    }
  }
  // A SQLite spill file's holds, key patterns and thresholds announced, before anything reads them.
  writeSpilledSide(db, config.data_dir, opts.log)
  const shown = redactUrl(url)
  const store = new PostgresStore(url, { applicationName: 'burnrate' })
  const ledger = new PgLedger(store, { ...ledgerOpts, dataDir: config.data_dir, log: opts.log, secret: passwordOf(url) ?? undefined })
  // The batch hooks, registered before the first batch (earlier spill files are written at
  // start-up), whatever features this server runs. First, the other instances' budget meters
  // hear each batch's calls once it commits (budgets/feed/): it locks nothing, so it goes
  // before the spend rows are locked and they are held no longer for it. Then every batch's calls
  // count in the budget spend rows they belong to (other instances' rules have rows too): first of
  // the hooks that lock, as every transaction storing calls locks spend rows before rollup rows.
  ledger.onBatchTx((tx, rows) => publishCalls(tx, store, rows))
  ledger.onBatchTx(spendCounter(config))
  ledger.start()
  opts.log.info(`ledger: PostgreSQL at ${shown} (this instance's own state stays in ${config.data_dir})`)
  return {
    store,
    ledger,
    health: () => ({ kind: 'postgres', url: shown, ...ledger.storage }),
    close: () => store.close(),
  }
}
