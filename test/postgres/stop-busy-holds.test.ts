import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { spillFiles } from '../../src/main/reliability/spill'
import { lockFromAnotherProcess, startBuiltServer } from '../load/harness'
import { backgroundResponder, type Answers } from '../providers/background-support'
import { eventually, postJson } from '../support/http'
import { localRows, until, usePostgres } from '../support/pg-harness'

// PostgreSQL: a background job's budget hold and the key's rule patterns are kept in the instance's
// own SQLite file, written at once, and, while another connection holds that file (`burnrate
// import`, a backup), kept in memory and tried again a moment later and at the stop. A stop while
// the file was still busy lost them: after the restart the job's reservation no longer held, and a
// second job passed the block rule. What the file cannot take at the stop is kept in a spill file
// of the data folder, and the next start writes it to the file.

const answers: Answers = new Map()
const background = backgroundResponder(answers)
// Background responses; `gpt-stall` (chat) answers its first bytes and then nothing, holding a first stop open.
const h = usePostgres({
  upstream: (req) =>
    req.method === 'POST' && req.url.startsWith('/v1/chat/completions')
      ? { status: 200, headers: { 'content-type': 'application/json' }, chunks: [Buffer.from('{"id":'), Buffer.from('"x"}')], stallAfterChunks: 1 }
      : background(req),
})

const CONFIG = {
  timezone: 'UTC',
  // $6: one job's worst case (125,000 output tokens of o3-deep-research, about $5) fits; a second's does not while the first runs.
  budgets: { rules: [{ api_key_pattern: 'sk-stopbusy-*', daily_limit_usd: 6, action: 'block', reserve: 'max_tokens' }] },
}
const KEY = 'sk-stopbusy-aaaaaaaaaaaa-0001'

const start = (url: string, id: string) =>
  postJson(
    `${url}/v1/responses`,
    { model: 'o3-deep-research', input: 'Research otters in space.', background: true, max_output_tokens: 125_000, metadata: { id } },
    { authorization: `Bearer ${KEY}` },
  )

describe('a PostgreSQL instance stopped while its own SQLite file is busy', () => {
  it('keeps the background hold and key patterns the file could not take: the job still holds its reservation after the restart', async () => {
    const url = h.database()
    const first = await h.server({ url, config: CONFIG })
    const lock = await lockFromAnotherProcess(first.dbFile)
    let locked = true
    try {
      expect((await start(first.url, 'resp_stopbusy_a')).status).toBe(200)
      await first.stop()
      await lock.release()
      locked = false
    } finally {
      if (locked) await lock.release()
    }
    const t = await h.server({ url, dir: first.dir, config: CONFIG })
    await until('the kept rows written and their file removed', async () => spillFiles(first.dir).length === 0)
    expect(localRows(t.dbFile, 'SELECT response_id FROM background_holds').map((r) => r.response_id)).toEqual(['resp_stopbusy_a'])
    expect(localRows(t.dbFile, 'SELECT api_key_hash, pattern FROM key_patterns')).toEqual([{ api_key_hash: hashKey(KEY), pattern: 'sk-stopbusy-*' }])
    const refused = await start(t.url, 'resp_stopbusy_b')
    expect(refused.status).toBe(429)
    expect(refused.json().error).toMatchObject({ type: 'budget_exceeded' })
  }, 90_000)

  it('at a second signal (the built server, exiting without waiting), keeps them too', async () => {
    const url = h.database()
    const config = { ...CONFIG, storage: { url, budget_wait_ms: 30_000 } }
    const first = await startBuiltServer(config, h.upstream.url)
    let t: Awaited<ReturnType<typeof h.server>> | null = null
    try {
      const lock = await lockFromAnotherProcess(first.dbFile)
      let locked = true
      try {
        expect((await start(first.url, 'resp_stopbusy_c')).status).toBe(200)
        // A call under way (its answer stalls) keeps the first stop waiting; the second signal cuts it.
        const stalled = postJson(`${first.url}/v1/chat/completions`, { model: 'gpt-stall' }, { authorization: `Bearer ${KEY}` }).catch(() => null)
        await eventually(() => h.upstream.requests.some((r) => r.body.toString().includes('gpt-stall')))
        first.child.kill('SIGTERM')
        await eventually(() => readFileSync(first.logFile, 'utf8').includes('SIGTERM: finishing calls under way'))
        expect(await first.stop()).toBe(1)
        await stalled
        await lock.release()
        locked = false
      } finally {
        if (locked) await lock.release()
      }
      expect(readFileSync(first.logFile, 'utf8')).toMatch(/row\(s\) \(budget holds, key patterns\) kept in .*ledger-spill-\d+\.jsonl until the next start/)
      t = await h.server({ url, dir: first.dataDir, config: CONFIG })
      await until('the kept rows written and their file removed', async () => spillFiles(first.dataDir).length === 0)
      expect(localRows(t.dbFile, 'SELECT response_id FROM background_holds').map((r) => r.response_id)).toEqual(['resp_stopbusy_c'])
      expect((await start(t.url, 'resp_stopbusy_d')).status).toBe(429)
    } finally {
      await t?.stop()
      await first.dispose()
    }
  }, 90_000)
})
