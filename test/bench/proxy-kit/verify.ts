import Database from 'better-sqlite3'
import { EXPECTED_USAGE } from './fixtures'

export interface MeterCheck {
  ok: boolean
  lines: string[]
}

/**
 * Reads Burnrate's ledger after the run and checks that every call the bench got an answer
 * for was recorded once, with the fixture's model and token counts and a price.
 */
export function checkLedger(dbFile: string, sent: Record<'chat.completions' | 'messages', number>): MeterCheck {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true })
  try {
    const lines: string[] = []
    let ok = true
    for (const endpoint of Object.keys(sent) as (keyof typeof sent)[]) {
      const want = EXPECTED_USAGE[endpoint]
      const r = db
        .prepare(
          `SELECT COUNT(*) AS n,
                  SUM(status = 200 AND model = @model AND input_tokens = @input_tokens AND output_tokens = @output_tokens
                      AND cache_read_tokens = @cache_read_tokens AND priced = 1 AND cost_usd > 0 AND estimated = 0) AS exact,
                  SUM(cost_usd) AS cost
             FROM calls WHERE endpoint = @endpoint`,
        )
        .get({ endpoint, ...want }) as { n: number; exact: number | null; cost: number | null }
      const good = r.n === sent[endpoint] && r.exact === r.n
      ok &&= good
      lines.push(
        `${endpoint}: ${r.n} calls recorded for ${sent[endpoint]} answered, ${r.exact ?? 0} with the fixture's exact tokens and a price ` +
          `($${(r.cost ?? 0).toFixed(4)} in all)${good ? '' : '  <-- MISMATCH'}`,
      )
    }
    return { ok, lines }
  } finally {
    db.close()
  }
}
