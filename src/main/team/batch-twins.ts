import { BATCH_RESULT_LIKE, isBatchResult } from '../providers/batch-results'
import type { SqlStore } from '../storage/sql'
import type { IngestRow } from './validate'

/** What tells one Batch API request's record from another's: the provider's answer, as the results file carried it. */
interface Twin {
  member: string | null
  origin_id: number | null
  response_id: string
  provider: string
  endpoint: string
  model: string
  input_tokens: number
  output_tokens: number
}

const COLUMNS = 'member, origin_id, response_id, provider, endpoint, model, input_tokens, output_tokens'

/**
 * Which of `rows` are Batch API requests this server holds already from another member (or from its
 * own proxy): two Burnrates that read the same results file (one ran the batch, a teammate's
 * script downloaded its results too) each record its requests, and each sends them, under ids of
 * its own. The provider ran, and billed, each once: a request is the one held when it is a batch
 * result (its endpoint `batch.…`) with the same answer id, provider, endpoint, model and tokens.
 * The first to arrive is stored (its member's); the other is a duplicate. Calls as first sent only
 * (a revision replaces only a call held under its own id).
 */
export async function heldBatchTwins(tx: SqlStore, rows: readonly IngestRow[]): Promise<(row: IngestRow) => boolean> {
  const asked = new Set(rows.filter((r) => r.revision === 0 && r.record.response_id && isBatchResult(r.record.endpoint)))
  if (asked.size === 0) return () => false
  const ids = [...new Set([...asked].map((r) => r.record.response_id!))]
  const held: Twin[] = []
  if (tx.dialect === 'postgres') {
    held.push(
      ...(await tx.all<Twin>(`SELECT ${COLUMNS} FROM calls WHERE response_id = ANY(@ids::text[]) AND response_id <> '' AND endpoint LIKE @like`, {
        ids,
        like: BATCH_RESULT_LIKE,
      })),
    )
  } else {
    for (const id of ids) {
      held.push(...(await tx.all<Twin>(`SELECT ${COLUMNS} FROM calls WHERE response_id = @id AND response_id <> '' AND endpoint LIKE @like`, { id, like: BATCH_RESULT_LIKE })))
    }
  }
  if (held.length === 0) return () => false
  const byAnswer = new Map<string, Twin[]>()
  for (const h of held) {
    const answer = answerOf(h)
    byAnswer.set(answer, [...(byAnswer.get(answer) ?? []), h])
  }
  return (row) => {
    if (!asked.has(row)) return false
    const r = row.record
    const same = byAnswer.get(answerOf({ ...r, response_id: r.response_id ?? '', endpoint: r.endpoint ?? '' })) ?? []
    // Its own copy (a resend under the same id) is the unique index's to find.
    return same.some((h) => !((h.member ?? '') === (r.member ?? '') && h.origin_id === row.origin_id))
  }
}

function answerOf(c: Omit<Twin, 'member' | 'origin_id'>): string {
  return JSON.stringify([c.response_id, c.provider, c.endpoint, c.model, Number(c.input_tokens), Number(c.output_tokens)])
}
