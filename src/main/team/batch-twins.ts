import { answerKey, byAnswer, heldAnswers, isBatchAnswer, lockBatchAnswers } from '../batch/twins'
import type { SqlStore } from '../storage/sql'
import type { IngestRow } from './validate'

/** The rows a twin is looked for: Batch API results as first sent (a revision replaces only a call held under its own id). */
const asked = (rows: readonly IngestRow[]) => rows.filter((r) => r.revision === 0 && isBatchAnswer(r.record))

/**
 * PostgreSQL: locks the answers of the batch results among `rows` (../batch/twins.ts,
 * lockBatchAnswers), first thing in the transaction that stores them: another instance storing a
 * copy of one at that moment (another member's, or its own proxy's) is waited for.
 */
export async function lockBatchTwins(tx: SqlStore, rows: readonly IngestRow[]): Promise<void> {
  await lockBatchAnswers(tx, asked(rows).map((r) => r.record.response_id!))
}

/**
 * Which of `rows` are Batch API requests this server holds already from another member (or from its
 * own proxy): two Burnrates that read the same results file (one ran the batch, a teammate's
 * script downloaded its results too) each record its requests, and each sends them, under ids of
 * its own. The provider ran, and billed, each once: a request is the one held when it is a batch
 * result (its endpoint `batch.…`) with the same answer id, provider, endpoint, model and tokens.
 * The first to arrive is stored (its member's); the other is a duplicate. Calls as first sent only
 * (a revision replaces only a call held under its own id). On PostgreSQL, read after
 * lockBatchTwins: a copy another instance stores at the same moment is seen.
 */
export async function heldBatchTwins(tx: SqlStore, rows: readonly IngestRow[]): Promise<(row: IngestRow) => boolean> {
  const wanted = new Set(asked(rows))
  if (wanted.size === 0) return () => false
  const held = await heldAnswers(tx, [...wanted].map((r) => r.record.response_id!))
  if (held.length === 0) return () => false
  const answers = byAnswer(held)
  return (row) => {
    if (!wanted.has(row)) return false
    const r = row.record
    const same = answers.get(answerKey({ ...r, response_id: r.response_id ?? '', endpoint: r.endpoint ?? '' })) ?? []
    // Its own copy (a resend under the same id) is the unique index's to find.
    return same.some((h) => !((h.member ?? '') === (r.member ?? '') && h.origin_id === row.origin_id))
  }
}
