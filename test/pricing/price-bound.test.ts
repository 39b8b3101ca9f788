import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfigText } from '../../src/main/config/load'
import { admin, ADMIN_CONFIG } from '../admin/support'
import { postJson } from '../support/http'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { chatAnswer as answer } from './support'

/**
 * A price of 1e308 USD per million tokens was taken (PUT answered 200, the config loaded), yet a
 * call of more than a token or two then cost Infinity and was recorded unpriced, silently. A price
 * above 1e9 USD per million tokens (far above any real one; a call's cost stays finite) is refused.
 */
describe('a price so large a call\'s cost could overflow', () => {
  let upstream: MockUpstream
  let t: TestServer
  const MODEL = 'bound-model'
  const call = () => postJson(`${t.url}/v1/chat/completions`, { model: MODEL, messages: [{ role: 'user', content: 'hi' }] }, { authorization: 'Bearer sk-test-bound-0000000001' })

  beforeAll(async () => {
    upstream = await startMockUpstream(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: answer(MODEL, 1_000_000, 100_000) }))
    t = await startTestServer({ ...ADMIN_CONFIG }, upstream.url)
  })
  afterAll(async () => {
    await t.cleanup()
    await upstream.close()
  })

  it('is a 400 naming the field on PUT; the largest allowed price prices a call at a finite cost', async () => {
    for (const [field, body] of [
      ['input_mtok', { input_mtok: 1e308, output_mtok: 1 }],
      ['output_mtok', { input_mtok: 1, output_mtok: 1e10 }],
      ['cache_read_mtok', { input_mtok: 1, output_mtok: 1, cache_read_mtok: 1e300 }],
      ['cache_write_mtok', { input_mtok: 1, output_mtok: 1, cache_write_mtok: 1_000_000_001 }],
    ] as const) {
      const r = await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body })
      expect(r.status, r.text).toBe(400)
      expect(r.json().error).toEqual({
        type: 'invalid_request',
        param: field,
        message: `${field} must be a number from 0 to 1000000000 (US dollars per million tokens).`,
      })
    }
    expect((await admin(t.url, 'GET', '/prices')).json().prices).toEqual([])
    const put = await admin(t.url, 'PUT', `/prices/openai/${MODEL}`, { body: { input_mtok: 1e9, output_mtok: 1e9 } })
    expect(put.status, put.text).toBe(200)
    expect((await call()).status).toBe(200)
    await t.server.ledger.flush()
    expect(t.server.db.prepare('SELECT cost_usd, priced FROM calls').all()).toEqual([{ cost_usd: 1.1e9, priced: 1 }])
  })

  it('is a config error naming the override\'s field', () => {
    const yaml = (price: number) => `pricing: { overrides: [{ model: m, input_mtok: 1, output_mtok: ${price} }] }`
    expect(parseConfigText(yaml(1e9), 'c.yaml').pricing.overrides[0].output_mtok).toBe(1e9)
    expect(() => parseConfigText(yaml(1e308), 'c.yaml')).toThrow(/pricing\.overrides\[0\]\.output_mtok: .*1000000000/)
    expect(() => parseConfigText(yaml(2e9), 'c.yaml')).toThrow(/output_mtok/)
  })
})
