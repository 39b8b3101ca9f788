import { describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { request } from '../support/http'
import { until, usePostgres } from '../support/pg-harness'
import { EXPECTED, OUTPUT } from './batch-support'

// PostgreSQL (`storage.url`): the same Batch API output file read through two instances at
// once. Each request is stored once in the shared ledger and counted once in the block rule's
// shared spend row, whichever instance stored it.

const BATCH = { id: 'batch_pg01', object: 'batch', endpoint: '/v1/chat/completions', status: 'validating', input_file_id: 'file-pg-input' }
const h = usePostgres({
  upstream: (req) =>
    req.method === 'POST' ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(BATCH) } : { headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT },
})
const KEY = 'sk-pgbatch-key-aaaaaaaaaa'

const close = (a: number, b: number) => Math.abs(a - b) <= Math.max(Math.abs(a), Math.abs(b)) * 1e-9

describe('Batch API results on PostgreSQL', () => {
  it('read through two instances at once: each request stored and counted in the shared spend once', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-pgbatch-*', daily_limit_usd: 1000, action: 'block' }] } }
    const a = await h.server({ url, config })
    const b = await h.server({ url, config })
    const store = h.store(url)
    // The batch is created through Burnrate (a call that costs nothing itself), as a script on the SDK does.
    const created = await request(`${a.url}/v1/batches`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input_file_id: 'file-pg-input', endpoint: '/v1/chat/completions', completion_window: '24h' }),
    })
    expect(created.json()).toMatchObject({ id: 'batch_pg01' })
    const read = (t: { url: string }) => request(`${t.url}/v1/files/file-pg-output/content`, { headers: { authorization: `Bearer ${KEY}` } })
    const [ra, rb] = await Promise.all([read(a), read(b)])
    expect(ra.body.equals(OUTPUT)).toBe(true)
    expect(rb.body.equals(OUTPUT)).toBe(true)
    const batch = () =>
      store.all<{ response_id: string; cost_usd: number; api_key_hash: string }>(
        "SELECT response_id, cost_usd, api_key_hash FROM calls WHERE endpoint LIKE 'batch.%' ORDER BY ts",
      )
    await until('both reads are stored', async () =>
      (await store.get<{ n: number }>("SELECT count(*) AS n FROM calls WHERE endpoint = 'files.content'"))!.n === 2,
    )
    await until('the requests are stored', async () => (await batch()).length >= EXPECTED.length)
    // A moment for the slower instance's attempt to land, were it to store them again.
    await new Promise((r) => setTimeout(r, 500))
    const rows = await batch()
    expect(rows.map((r) => r.response_id)).toEqual(EXPECTED.map((e) => e.response_id))
    for (const [i, r] of rows.entries()) {
      expect(close(r.cost_usd, EXPECTED[i].cost_usd)).toBe(true)
      expect(r.api_key_hash).toBe(hashKey(KEY))
    }
    const total = EXPECTED.reduce((s, e) => s + e.cost_usd, 0)
    const spend = async () =>
      (await store.get<{ spent_usd: number }>("SELECT spent_usd FROM budget_spend WHERE api_key_hash = @k AND period = 'daily'", { k: hashKey(KEY) }))?.spent_usd
    await until('the shared spend row counts them', async () => close((await spend()) ?? -1, total))
    await new Promise((r) => setTimeout(r, 300))
    expect(close((await spend())!, total)).toBe(true)
  })
})
