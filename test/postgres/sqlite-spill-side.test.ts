import { appendFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { spillFiles } from '../../src/main/reliability/spill'
import { lockFromAnotherProcess } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { postJson } from '../support/http'
import { localRows, sessionCounts, until, usePostgres } from '../support/pg-harness'
import { startTestServer } from '../support/server'

// A data folder switched from SQLite to PostgreSQL (storage.url) while a spill file of the SQLite
// ledger waited in it: the PostgreSQL ledger wrote the file's calls and removed it, and dropped its
// other rows (a background job's budget hold, a key's rule patterns, a budget threshold announced),
// so the running job's reservation no longer held and a second job passed the block rule.

const answers: Answers = new Map()
const h = usePostgres({ upstream: backgroundResponder(answers) })

const CONFIG = {
  timezone: 'UTC',
  // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first runs.
  budgets: { rules: [{ api_key_pattern: 'sk-swside-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] },
}
const KEY = 'sk-swside-aaaaaaaaaaaa-0001'

const start = (url: string, id: string) =>
  postJson(
    `${url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } },
    { authorization: `Bearer ${KEY}` },
  )

describe('a SQLite spill file read by the PostgreSQL ledger', () => {
  it('keeps its holds, key patterns and thresholds announced: the job still holds its reservation', async () => {
    const first = await startTestServer(CONFIG, h.upstream.url)
    const lock = await lockFromAnotherProcess(first.dbFile)
    try {
      expect((await start(first.url, 'resp_swside_a')).status).toBe(200)
      await first.stop()
    } finally {
      await lock.release()
    }
    const [file] = spillFiles(first.dir)
    // A threshold announced, as a SQLite ledger keeps it (budgets/announced.ts).
    appendFileSync(file, JSON.stringify({ side: { announced: { id: 'swside-crossing', until: Date.now() + 3_600_000 } } }) + '\n')

    const url = h.database()
    const store = h.store(url)
    const t = await h.server({ url, dir: first.dir, config: CONFIG })
    await until('the spilled call in PostgreSQL, its file removed', async () => spillFiles(first.dir).length === 0 && Object.keys(await sessionCounts(store)).length === 1)
    expect(localRows(t.dbFile, 'SELECT response_id FROM background_holds').map((r) => r.response_id)).toEqual(['resp_swside_a'])
    expect(localRows(t.dbFile, 'SELECT api_key_hash, pattern FROM key_patterns')).toEqual([{ api_key_hash: hashKey(KEY), pattern: 'sk-swside-*' }])
    await until('the threshold announced in PostgreSQL', async () => (await store.all('SELECT id FROM budget_announced')).some((r: any) => r.id === 'swside-crossing'))
    // The first job's reservation holds on PostgreSQL too: a second one does not fit beside it.
    const refused = await start(t.url, 'resp_swside_b')
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded' })
  }, 90_000)
})
