import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG } from '../admin/support'
import { RAN, batchCost, chat, line, storedAfter } from './batch-support'
import { eventually, request } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'

// A batch's output file of thousands of requests (OpenAI allows 50,000 in a batch, Anthropic
// 100,000): storing them all in one synchronous transaction (pricing each, its rollups, the
// spend and budget meters) held the event loop, and with it every proxied call, for seconds
// (3.2 s for 50,000 on a test machine). They are stored a slice at a time, the event loop
// turning between slices: what runs on it (here, a poll of the ledger) runs while they are stored.

const KEY = 'sk-test-batch-turns-aaaaaaaa'
const N = 5000
const OUTPUT = Buffer.from(
  Array.from({ length: N }, (_, i) => line(`batch_req_turns${i}`, `task-${i}`, { ...chat, id: `chatcmpl-turns-${i}` })).join('\n') + '\n',
)
const EACH = batchCost(chat.model, { input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, RAN)

describe('a results file of thousands of requests', () => {
  let upstream: MockUpstream
  let t: TestServer

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT }))
    t = await startTestServer({ ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-test-*', daily_limit_usd: 1000, action: 'warn' }] } }, upstream.url)
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  it('is stored a slice at a time, the event loop turning between slices; each request once, counted once', async () => {
    const db = new Database(t.dbFile, { readonly: true })
    const count = db.prepare("SELECT count(*) FROM calls WHERE endpoint LIKE 'batch.%' AND response_id NOT LIKE 'chatcmpl-mark-%'").pluck()
    // Every turn of the event loop (the check phase, where I/O callbacks have run), how many are stored.
    const seen = new Set<number>()
    let polling = true
    const poll = () => {
      seen.add(count.get() as number)
      if (polling) setImmediate(poll)
    }
    setImmediate(poll)
    try {
      const r = await request(`${t.url}/v1/files/file-turns/content`, { headers: { authorization: `Bearer ${KEY}` } })
      expect(r.status).toBe(200)
      expect(r.body.equals(OUTPUT)).toBe(true)
      await eventually(() => (count.get() === N ? true : undefined), 60_000)
    } finally {
      polling = false
    }
    // Seen part-way: the poll ran between two slices (one transaction held it until all were stored).
    expect([...seen].some((n) => n > 0 && n < N)).toBe(true)
    const rows = db.prepare("SELECT response_id, cost_usd, api_key_hash FROM calls WHERE endpoint LIKE 'batch.%'").all() as { response_id: string; cost_usd: number; api_key_hash: string }[]
    expect(new Set(rows.map((r) => r.response_id)).size).toBe(N)
    for (const r of rows) expect(r).toMatchObject({ cost_usd: EACH, api_key_hash: hashKey(KEY) })
    // Today's spend counted each once (the budget's day).
    const spent = async () => {
      const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
      return body.rules.find((x: any) => x.api_key_hash === hashKey(KEY))?.windows[0]?.spent_usd as number | undefined
    }
    const sum = rows.reduce((a, r) => a + r.cost_usd, 0)
    await eventually(async () => (Math.abs(((await spent()) ?? 0) - sum) < 1e-9 ? true : undefined))
    // Read again: nothing more.
    await request(`${t.url}/v1/files/file-turns/content`, { headers: { authorization: `Bearer ${KEY}` } })
    await storedAfter(t, upstream)
    expect(count.get()).toBe(N)
    expect(Math.abs(((await spent()) ?? 0) - sum)).toBeLessThan(1e-9)
    db.close()
  }, 120_000)
})
