import http from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ledgerSpend } from '../../src/main/desktop-logic/spend-source'
import { hashKey } from '../../src/main/proxy/attribution'
import { ADMIN_CONFIG, admin } from '../admin/support'
import { EXPECTED, INPUT, OUTPUT, RAN, batchCost, chat, notMarks, reasoning, response, storedAfter as storedAfterIn } from './batch-support'
import { eventually, request } from '../support/http'
import { type MockUpstream, type Reply, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { rows } from './ledger'

// OpenAI's Batch API: requests run later at half the token prices, and their answers come back
// in an output file, read with `GET /v1/files/{output_file_id}/content` (the SDK's
// `files.content`). Each request that succeeded is a model call Burnrate records from that file,
// once, priced at the batch rates; the file itself passes through byte for byte.

const KEY = 'sk-test-batch-aaaaaaaaaaaa'

describe('OpenAI Batch API: the requests in a batch output file are metered, once, at batch prices', () => {
  let upstream: MockUpstream
  let t: TestServer
  /** How the mock sends the output file. */
  let send: (r: { url: string }) => Reply = () => ({ body: OUTPUT })

  beforeAll(async () => {
    upstream = await startMockUpstream((req) => {
      if (req.url === '/v1/files/file-input01/content') return { headers: { 'content-type': 'application/octet-stream' }, body: INPUT }
      return send(req)
    })
    t = await startTestServer(
      { ...ADMIN_CONFIG, timezone: 'UTC', budgets: { rules: [{ api_key_pattern: 'sk-test-*', daily_limit_usd: 1000, action: 'warn' }] } },
      upstream.url,
    )
  })
  afterAll(async () => {
    await t?.cleanup()
    await upstream?.close()
  })

  const content = (file: string) =>
    request(`${t.url}/v1/files/${file}/content`, { headers: { authorization: `Bearer ${KEY}`, 'user-agent': 'OpenAI/Python 1.99.0' } })
  /** The calls recorded, storedAfter's reads and their requests left out. */
  const mine = () => notMarks(rows(t))
  const batchRows = () => mine().filter((r) => r.endpoint.startsWith('batch.'))
  const storedAfter = () => storedAfterIn(t, upstream)
  const spentToday = async () => {
    const body = (await request(`${t.url}/api/dashboard/budgets`)).json()
    return (body.rules.find((r: any) => r.api_key_hash === hashKey(KEY))?.windows[0]?.spent_usd as number | undefined) ?? 0
  }

  it('each request that succeeded is a call with its own model, tokens and half the list price; the file passes unchanged', async () => {
    send = () => ({ headers: { 'content-type': 'application/octet-stream' }, body: OUTPUT })
    const r = await content('file-output01')
    expect(r.status).toBe(200)
    expect(r.body.equals(OUTPUT)).toBe(true)
    const got = (await eventually(() => (batchRows().length === 3 ? batchRows() : undefined)))!
    expect(got.map((c) => ({
      response_id: c.response_id, model: c.model, endpoint: c.endpoint, input_tokens: c.input_tokens, cache_read_tokens: c.cache_read_tokens,
      output_tokens: c.output_tokens, reasoning_tokens: c.reasoning_tokens, ts: c.ts, cost_usd: c.cost_usd,
    }))).toEqual(EXPECTED)
    for (const c of got) {
      expect(c).toMatchObject({ provider: 'openai', api_key_hash: hashKey(KEY), status: 200, priced: 1, estimated: 0, source: 'proxy', billing: 'api', streamed: 0 })
      expect(c.cost_usd).toBeGreaterThan(0)
      expect(JSON.parse(c.usage_extra)).toEqual({ batch: true })
    }
    // The read itself is a call that costs nothing.
    await eventually(() => rows(t).find((c) => c.endpoint === 'files.content' && c.status === 200 && c.cost_usd === 0))
    // Counted in the budget rule's day at once.
    const total = EXPECTED.reduce((a, e) => a + e.cost_usd, 0)
    await eventually(async () => Math.abs((await spentToday()) - total) < 1e-12)
  })

  it('the same file read again, compressed and in pieces that cut lines, adds nothing', async () => {
    const before = await spentToday()
    send = () => ({ headers: { 'content-type': 'application/octet-stream' }, chunks: cut(OUTPUT, 7), encoding: 'gzip' })
    const r = await content('file-output01')
    expect(r.status).toBe(200)
    await eventually(() => mine().filter((c) => c.endpoint === 'files.content').length === 2)
    await storedAfter()
    expect(batchRows()).toHaveLength(3)
    expect(await spentToday()).toBe(before)
  })

  it('a read cut short records the requests it got whole; reading the rest later records the others, none twice', async () => {
    const other = OUTPUT.toString().replaceAll('batch_req_aaa', 'batch_req_bbb').replaceAll(chat.id, 'chatcmpl-other1').replaceAll(reasoning.id, 'chatcmpl-other2').replaceAll(response.id, 'resp_other3')
    const body = Buffer.from(other)
    const firstLine = body.indexOf(10) + 1
    // The first line and half the second, then nothing: the client gives up.
    send = () => ({ headers: { 'content-type': 'application/octet-stream' }, chunks: [body.subarray(0, firstLine + 40), body.subarray(firstLine + 40)], stallAfterChunks: 1 })
    await new Promise<void>((resolve, reject) => {
      const req = http.get(`${t.url}/v1/files/file-output02/content`, { headers: { authorization: `Bearer ${KEY}` }, agent: false }, (res) => {
        res.once('data', () => {
          req.destroy()
          resolve()
        })
      })
      req.on('error', (e) => (req.destroyed ? resolve() : reject(e)))
    })
    await eventually(() => batchRows().some((c) => c.response_id === 'chatcmpl-other1'))
    await storedAfter()
    expect(batchRows().filter((c) => c.response_id.includes('other'))).toHaveLength(1)

    send = () => ({ headers: { 'content-type': 'application/octet-stream' }, body })
    expect((await content('file-output02')).status).toBe(200)
    await eventually(() => batchRows().length === 6)
    await storedAfter()
    const ids = batchRows().map((c) => c.response_id)
    expect(ids).toHaveLength(6)
    expect(new Set(ids).size).toBe(6)
  })

  it('re-pricing the model keeps its batch requests at half the price', async () => {
    const model = reasoning.model
    expect((await admin(t.url, 'PUT', `/prices/openai/${model}`, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    expect((await admin(t.url, 'POST', `/prices/openai/${model}/reprice?all=true`)).json()).toMatchObject({ repriced: 4 })
    const mine = batchRows().filter((c) => c.model === model)
    expect(mine.length).toBeGreaterThan(0)
    for (const c of mine) expect(c.cost_usd).toBe((c.input_tokens * 1 + c.output_tokens * 2) / 1e6 / 2)
    expect((await admin(t.url, 'DELETE', `/prices/openai/${model}`)).status).toBe(204)
  })

  it('a call the Flex tier served (service_tier: "flex") is priced at the same batch rates', async () => {
    send = () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...chat, id: 'chatcmpl-flex-1', service_tier: 'flex' }) })
    const r = await request(`${t.url}/v1/chat/completions`, {
      method: 'POST', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', service_tier: 'flex', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(r.status).toBe(200)
    const call = (await eventually(() => rows(t).find((c) => c.response_id === 'chatcmpl-flex-1')))!
    // The same answer as the batch's first request, so the same cost, priced at the call's own time.
    expect(call).toMatchObject({ endpoint: 'chat.completions', input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 })
    expect(call.cost_usd).toBe(batchCost(chat.model, { input_tokens: 1149, cache_read_tokens: 1024, output_tokens: 353 }, call.ts / 1000))
  })

  it("the desktop tray's spend is told when a batch's requests are stored (no proxied call of theirs announces them)", async () => {
    const tray = ledgerSpend(t.server.ledger)
    // What the tray would draw each time it is told.
    const drawn: number[] = []
    tray.subscribe(() => drawn.push(tray.today()!))
    const before = tray.today()!
    const body = Buffer.from(OUTPUT.toString().replaceAll('batch_req_aaa', 'batch_req_ccc').replaceAll(chat.id, 'chatcmpl-tray1').replaceAll(reasoning.id, 'chatcmpl-tray2').replaceAll(response.id, 'resp_tray3'))
    send = () => ({ headers: { 'content-type': 'application/octet-stream' }, body })
    expect((await content('file-output03')).status).toBe(200)
    const total = EXPECTED.reduce((a, e) => a + e.cost_usd, 0)
    await eventually(() => drawn.some((v) => Math.abs(v - before - total) < 1e-12))
    tray.stop()
    // The read's own row is written before the next test counts rows.
    t.server.ledger.flush()
  })

  it("following a finished batch records nothing: the Batch object's `usage` is the batch's requests' total, recorded from its output file", async () => {
    // The Batch object as OpenAI's API reference gives it (GET /v1/batches/{batch_id}, "The batch object"):
    // batches created after September 7, 2025 carry `usage`, the tokens of all their requests together.
    const batch = {
      id: 'batch_abc123', object: 'batch', endpoint: '/v1/chat/completions', model: 'gpt-4o-mini-2024-07-18', errors: null,
      input_file_id: 'file-input01', completion_window: '24h', status: 'completed', output_file_id: 'file-output01', error_file_id: null,
      created_at: RAN - 60, in_progress_at: RAN - 59, expires_at: RAN + 86340, finalizing_at: RAN + 3, completed_at: RAN + 4,
      failed_at: null, expired_at: null, cancelling_at: null, cancelled_at: null,
      request_counts: { total: 5, completed: 3, failed: 2 },
      usage: { input_tokens: 1171, input_tokens_details: { cached_tokens: 1024 }, output_tokens: 908, output_tokens_details: { reasoning_tokens: 512 }, total_tokens: 2079 },
      metadata: null,
    }
    const before = await spentToday()
    send = () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify(batch) })
    for (const [method, path] of [['GET', '/v1/batches/batch_abc123'], ['POST', '/v1/batches/batch_abc123/cancel']] as const) {
      const r = await request(`${t.url}${path}`, { method, headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body: method === 'POST' ? '{}' : undefined })
      expect(r.status).toBe(200)
    }
    send = () => ({ headers: { 'content-type': 'application/json' }, body: JSON.stringify({ object: 'list', data: [batch], first_id: batch.id, last_id: batch.id, has_more: false }) })
    expect((await request(`${t.url}/v1/batches?limit=1`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200)
    const reads = (await eventually(() => {
      const r = rows(t).filter((c) => c.endpoint.startsWith('batches.'))
      return r.length === 3 ? r : undefined
    }))!
    for (const c of reads) expect(c).toMatchObject({ input_tokens: 0, output_tokens: 0, cost_usd: 0 })
    expect(await spentToday()).toBe(before)
  })

  it('any other file (a batch input file) records no call but its read', async () => {
    const before = mine().length
    const r = await content('file-input01')
    expect(r.body.equals(INPUT)).toBe(true)
    const after = (await eventually(() => (mine().length > before ? mine() : undefined)))!
    await storedAfter()
    expect(mine()).toHaveLength(before + 1)
    expect(after[after.length - 1]).toMatchObject({ endpoint: 'files.content', cost_usd: 0 })
  })
})

/** `buf` in `n` pieces of about the same size (cutting through lines and multi-byte characters). */
function cut(buf: Buffer, n: number): Buffer[] {
  const size = Math.ceil(buf.length / n)
  const out: Buffer[] = []
  for (let i = 0; i < buf.length; i += size) out.push(buf.subarray(i, i + size))
  return out
}
