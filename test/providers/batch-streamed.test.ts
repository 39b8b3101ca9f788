import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { RAN, batchCost, chat, line, storedAfter } from './batch-support'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// A results file's requests were all held in memory until the file had been read to its end (a
// Gemini batch's file, up to 2 GB, can hold millions), and only then stored. They are handed to
// the recorder a thousand at a time as the lines pass: stored while the file still streams, the
// memory they take bounded by what waits for the database (ledger.max_pending).

const KEY = 'sk-test-batch-streamed-aaaaaaaa'
const N = 3500
const LINES = Array.from({ length: N }, (_, i) => line(`batch_req_streamed${i}`, `task-${i}`, { ...chat, id: `chatcmpl-streamed-${i}` }) + '\n')
const EACH = batchCost(chat.model, { input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, RAN)

describe('a results file still streaming', () => {
  let upstream: MockUpstream
  let t: TestServer
  let release: () => void = () => {}
  let released = new Promise<void>((r) => (release = r))

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({
      headers: { 'content-type': 'application/octet-stream' },
      // The first 2,500 lines, then nothing until the test lets the rest go.
      chunks: [Buffer.from(LINES.slice(0, 2500).join('')), Buffer.from(LINES.slice(2500).join(''))],
      holdAfterChunks: 1,
      release: released,
    }))
    t = await startTestServer({ timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-test-*', daily_limit_usd: 1000, action: 'warn' }] } }, upstream.url)
  })
  afterAll(async () => {
    release()
    await t?.cleanup()
    await upstream?.close()
  })

  it('has its requests stored as its lines pass, each once; the rest once the file ends', async () => {
    const db = new Database(t.dbFile, { readonly: true })
    const count = () => db.prepare("SELECT count(*) FROM calls WHERE endpoint LIKE 'batch.%' AND response_id NOT LIKE 'chatcmpl-mark-%'").pluck().get() as number
    const reading = request(`${t.url}/v1/files/file-streamed/content`, { headers: { authorization: `Bearer ${KEY}` } })
    try {
      // While the file is still open: the requests of its first 2,500 lines (whole thousands at least).
      await eventually(() => (count() >= 2000 ? true : undefined), 20_000)
      expect(count()).toBeLessThanOrEqual(2500)
    } finally {
      release()
    }
    const r = await reading
    expect(r.status).toBe(200)
    expect(r.body.toString('utf8')).toBe(LINES.join(''))
    await eventually(() => (count() === N ? true : undefined), 20_000)
    const rows = db.prepare("SELECT response_id, cost_usd, api_key_hash FROM calls WHERE endpoint LIKE 'batch.%'").all() as { response_id: string; cost_usd: number; api_key_hash: string }[]
    expect(new Set(rows.map((x) => x.response_id)).size).toBe(N)
    for (const x of rows) expect(x).toMatchObject({ cost_usd: EACH, api_key_hash: hashKey(KEY) })
    const spent = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return (body.rules.find((x: any) => x.api_key_hash === hashKey(KEY))?.windows[0]?.spent_usd as number | undefined) ?? 0
    }
    const sum = rows.reduce((a, x) => a + x.cost_usd, 0)
    await eventually(async () => (Math.abs((await spent()) - sum) < 1e-9 ? true : undefined))
    // Read again, whole: nothing more.
    released = Promise.resolve()
    await request(`${t.url}/v1/files/file-streamed/content`, { headers: { authorization: `Bearer ${KEY}` } })
    await storedAfter(t, upstream)
    expect(count()).toBe(N)
    expect(Math.abs((await spent()) - sum)).toBeLessThan(1e-9)
    db.close()
  }, 60_000)
})
