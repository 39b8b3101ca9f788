import { randomBytes } from 'node:crypto'
import { basename } from 'node:path'
import type { CallRecord } from './record'

/**
 * The SQLite ledger's call keys (`calls.call_key`, unique where set: ledger migration 9). A call
 * is given one when its write could be done twice: when its batch goes to the write thread (a
 * thread that does not answer in time, or dies, may have committed it before its batch is written
 * again here) and when it goes to a spill file (a process killed after the start-up replay's commit
 * and before the file's removal leaves both). Written again, it inserts nothing. Calls written
 * only on the ledger's own thread, in one synchronous transaction, have none (the partial index
 * holds nothing for them). A run's keys are 72 random bits (12 characters: among a million runs,
 * two share them with a chance of about 1 in 10^10) and a sequence number: short, as each is
 * stored twice (row and index: about 50 bytes a call).
 */
export class CallKeys {
  private readonly prefix = `${randomBytes(9).toString('base64url')}.`
  private seq = 0

  /** Gives each of `rows` without a key one of its own (on the row itself). */
  give(rows: readonly CallRecord[]): void {
    for (const r of rows) if (!r.call_key) r.call_key = this.prefix + (++this.seq).toString(36)
  }
}

/**
 * Gives the calls of a spill file written before they carried keys (`rows`, in the file's order)
 * keys made of the file's name and their line among its calls: the same at every reading, so a
 * file read again after its calls were stored (a kill before its removal) stores nothing twice.
 * The PostgreSQL ledger reads such files the same way, a batch at a time (`first`: the line among
 * the file's calls of the first of `rows`).
 */
export function keysFromFile(file: string, rows: readonly CallRecord[], first = 0): void {
  const name = basename(file)
  for (let i = 0; i < rows.length; i++) if (!rows[i].call_key) rows[i].call_key = `${name}:${first + i}`
}
