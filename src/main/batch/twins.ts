import { BATCH_RESULT_LIKE, isBatchResult } from '../providers/batch-results'
import type { SqlStore } from '../storage/sql'

/**
 * One Batch API request's answer, as its results file carried it: what tells its records apart
 * from another request's. Two Burnrates that read the same results file (one ran the batch, a
 * teammate's script downloaded its results too; or a team server's own proxy and a member's) each
 * record it under ids of their own; the provider ran, and billed, it once.
 */
export interface BatchAnswer {
  response_id: string
  provider: string
  endpoint: string
  model: string
  input_tokens: number
  output_tokens: number
}

/** A stored call holding a Batch API answer: its answer, its id, and whose it is (a team member's call: `origin_id` set). */
export interface HeldAnswer extends BatchAnswer {
  id: number
  member: string | null
  origin_id: number | null
}

/** Whether a record is a Batch API answer a twin can be looked for by (a batch result with an answer id). */
export function isBatchAnswer(c: { endpoint?: string | null; response_id?: string | null }): boolean {
  return !!c.response_id && isBatchResult(c.endpoint ?? undefined)
}

/** The answer as one string (the same answer, the same string). */
export function answerKey(c: BatchAnswer): string {
  return JSON.stringify([c.response_id, c.provider, c.endpoint, c.model, Number(c.input_tokens), Number(c.output_tokens)])
}

/**
 * The advisory locks' key space of Batch API answers (PostgreSQL's two-int4 form, as
 * ../budgets/state/pg/call-spend.ts's, with a space of its own), and how many locks an answer id
 * falls into (its `hashtext` modulo this). A transaction storing a results file's 1,000 requests
 * takes at most this many (the lock table is shared, 64 per connection by default), and two answer
 * ids in one bucket merely wait on each other.
 */
const LOCK_SPACE = 0x42526274 // 'BRbt'
const BUCKETS = 256

/**
 * PostgreSQL: takes, until the transaction ends, the lock of each of these answer ids, in one
 * order (no two transactions wait on each other in a cycle). Whoever stores a Batch API answer on
 * a shared database (a team instance ingesting a member's copy: ../team/store.ts; an instance's
 * own proxy reading a results file: ../import/write-postgres.ts) takes it first thing in its
 * transaction, then looks for the answer's twin and inserts: a twin another instance is storing at
 * that moment is waited for, and seen once committed (the look-up is a later statement), so
 * exactly one copy is stored whatever the interleaving. A constraint could not say it: rows stored
 * twice before this existed would stop its creation, and a revision's new tokens would break it.
 */
export async function lockBatchAnswers(tx: SqlStore, responseIds: readonly string[]): Promise<void> {
  if (tx.dialect !== 'postgres' || responseIds.length === 0) return
  await tx.run(
    `SELECT pg_advisory_xact_lock(${LOCK_SPACE}, b)
       FROM (SELECT DISTINCT hashtext(r) & ${BUCKETS - 1} AS b FROM unnest(@ids::text[]) AS r ORDER BY 1) AS s`,
    { ids: [...new Set(responseIds)] },
  )
}

const COLUMNS = 'id, member, origin_id, response_id, provider, endpoint, model, input_tokens, output_tokens'

/** The stored Batch API answers with these answer ids (any member's, and this server's own). */
export async function heldAnswers(tx: SqlStore, responseIds: readonly string[]): Promise<HeldAnswer[]> {
  const ids = [...new Set(responseIds)].filter(Boolean)
  if (ids.length === 0) return []
  if (tx.dialect === 'postgres') {
    return tx.all<HeldAnswer>(`SELECT ${COLUMNS} FROM calls WHERE response_id = ANY(@ids::text[]) AND response_id <> '' AND endpoint LIKE @like ORDER BY id`, {
      ids,
      like: BATCH_RESULT_LIKE,
    })
  }
  const held: HeldAnswer[] = []
  for (const id of ids) {
    held.push(...(await tx.all<HeldAnswer>(`SELECT ${COLUMNS} FROM calls WHERE response_id = @id AND response_id <> '' AND endpoint LIKE @like ORDER BY id`, { id, like: BATCH_RESULT_LIKE })))
  }
  return held
}

/** The held answers grouped by answerKey. */
export function byAnswer(held: readonly HeldAnswer[]): Map<string, HeldAnswer[]> {
  const out = new Map<string, HeldAnswer[]>()
  for (const h of held) {
    const key = answerKey(h)
    out.set(key, [...(out.get(key) ?? []), h])
  }
  return out
}
