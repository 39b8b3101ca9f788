import { isDatabaseProblem, sanitizeRecord } from '../reliability/rows'
import type { CallRecord } from './record'
import type { SideWrite } from './side-writes'

/** A batch's write: its calls and the rows kept with them, in one transaction. */
export type WriteBatch = (rows: CallRecord[], side?: readonly SideWrite[]) => void

export interface OneByOneResult {
  /** How many of the rows, from the first, were written or dropped: the rest stay queued. */
  written: number
  /** Rows refused even with their fields coerced to the table's shape, and dropped. */
  dropped: number
  /** Why the last dropped row was refused. */
  dropError?: unknown
  /** The side rows kept because the database itself refused them (empty when they were written). */
  keptSide: SideWrite[]
  /** The database's own failure (full, locked...) that stopped the writes, if one did. */
  stopError?: unknown
}

/**
 * Writes a batch the database refused for one of its rows one transaction a row, so that the
 * row does not hold back the others: the side rows first, on their own (before the calls they
 * belong to), then each call; a call refused for itself is written again with its fields coerced
 * to the table's shape (reliability/rows.ts), and dropped only if even that fails. It stops as
 * soon as the database itself is the problem (locked, full, gone), keeping the rest. Side rows
 * refused for themselves are dropped: a key's patterns are learnt again at its next call; a hold
 * stays held in memory, as when the file cannot be written.
 */
export function writeOneByOne(write: WriteBatch, rows: readonly CallRecord[], side: SideWrite[]): OneByOneResult {
  const result: OneByOneResult = { written: 0, dropped: 0, keptSide: [] }
  try {
    if (side.length > 0) write([], side)
  } catch (err) {
    if (isDatabaseProblem(err)) {
      result.keptSide = side
      result.stopError = err
      return result
    }
  }
  let i = 0
  for (; i < rows.length; i++) {
    try {
      write([rows[i]])
    } catch (err) {
      if (isDatabaseProblem(err)) {
        result.stopError = err
        break
      }
      try {
        write([sanitizeRecord(rows[i])])
      } catch (again) {
        if (isDatabaseProblem(again)) {
          result.stopError = again
          break
        }
        result.dropped++
        result.dropError = again
      }
    }
  }
  result.written = i
  return result
}
