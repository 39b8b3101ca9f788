import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { admin, ADMIN_CONFIG } from '../admin/support'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { chatAnswer as answer } from './support'

/**
 * A model recorded with a space around its name (a client's `"model": "qwen3-local "`, answered as
 * asked) is listed unpriced under that exact name; a price set for that name prices its calls.
 * The price library looks a call's model up trimmed, so a price table matching the untrimmed
 * name never matched: the PUT answered 200 and the calls stayed unpriced, re-pricing included.
 */
describe('a runtime price for a model whose name has spaces around it', () => {
  let upstream: MockUpstream
  let t: TestServer
  const MODEL = ' qwen3-local-spaced '
  const call = () => postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-test-spaces-0000000001' })

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer(MODEL, 1_000_000, 100_000) }))
    t = await startTestServer({ ...ADMIN_CONFIG, pricing: { overrides: [{ provider: 'groq', model: ' spaced-override ', input_mtok: 1, output_mtok: 1 }] } }, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('prices its later calls and re-prices the past ones', async () => {
    expect((await call()).status).toBe(200)
    const put = await admin(t.url, 'PUT', `/prices/openai/${encodeURIComponent(MODEL)}`, { body: { input_mtok: 3, output_mtok: 12 } })
    expect(put.status).toBe(200)
    expect(put.json().model).toBe(MODEL)
    expect((await call()).status).toBe(200)
    await t.server.ledger.flush()
    const rows = () => t.server.db.prepare('SELECT model, cost_usd, priced FROM calls ORDER BY id').all()
    expect(rows()).toEqual([
      { model: MODEL, cost_usd: 0, priced: 0 },
      { model: MODEL, cost_usd: 4.2, priced: 1 },
    ])
    const r = await admin(t.url, 'POST', `/prices/openai/${encodeURIComponent(MODEL)}/reprice`)
    expect(r.json()).toMatchObject({ repriced: 1, unpriced: 0, cost_usd_after: 4.2 })
    expect(rows().map((x: any) => x.cost_usd)).toEqual([4.2, 4.2])
  })

  it('a pricing.overrides entry naming it so prices it too', async () => {
    const p = t.server.context.pricer.price('groq', 'groq', ' spaced-override ', { ...(await import('../../src/main/metering/usage')).emptyUsage(), input_tokens: 1_000_000, output_tokens: 1_000_000 }, new Date())
    expect(p).toEqual({ cost_usd: 2, priced: true })
  })
})
