import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../support/server'
import { ADMIN_CONFIG, admin } from './support'

/**
 * A money-bearing admin body that names a field twice (`{"input_mtok": 1, …, "input_mtok": 100}`)
 * was taken with its last value, silently: a script or proxy that reads the first (as some JSON
 * parsers do) believed another price or limit was set than Burnrate applied. It is a 400
 * `invalid_request` naming the field as `param`, and nothing is written.
 */
let t: TestServer
beforeAll(async () => {
  t = await startTestServer(ADMIN_CONFIG)
})
afterAll(async () => {
  await t.cleanup()
})

const JSON_TYPE = { 'content-type': 'application/json' }
const refusal = (key: string) => ({
  type: 'invalid_request',
  message: `The request body names "${key}" more than once; name each field once (JSON readers differ on which of its values they keep).`,
  param: key,
})

describe('admin bodies with a key named twice', () => {
  it('PUT /prices is refused naming the key, and the stored price stays as it was', async () => {
    const path = '/prices/openai/dup-model'
    expect((await admin(t.url, 'PUT', path, { body: { input_mtok: 1, output_mtok: 2 } })).status).toBe(200)
    const bodies: [string, string | Buffer, Record<string, string>][] = [
      ['input_mtok', '{"input_mtok": 1, "output_mtok": 2, "input_mtok": 100}', JSON_TYPE],
      ['output_mtok', '{"output_mtok":2,"input_mtok":1,"cache_read_mtok":0.5,"output_mtok":0}', JSON_TYPE],
      // A key spelled with an escape is the same key.
      ['input_mtok', '{"input_mtok":1,"output_mtok":2,"input\\u005fmtok":100}', JSON_TYPE],
      // And compressed.
      ['input_mtok', gzipSync('{"input_mtok": 1, "output_mtok": 2, "input_mtok": 100}'), { ...JSON_TYPE, 'content-encoding': 'gzip' }],
    ]
    for (const [key, raw, headers] of bodies) {
      const r = await admin(t.url, 'PUT', path, { raw, headers })
      expect(r.status, `${raw}: ${r.text}`).toBe(400)
      expect(r.headers['content-type']).toMatch(/^application\/json/)
      expect(r.json().error, String(raw)).toEqual(refusal(key))
    }
    const { prices } = (await admin(t.url, 'GET', '/prices')).json() as { prices: { model: string }[] }
    expect(prices.filter((p) => p.model === 'dup-model')).toMatchObject([{ provider: 'openai', model: 'dup-model', input_mtok: 1, output_mtok: 2 }])
  })

  it('POST /budgets/rules is refused naming the key, and no rule is made', async () => {
    const raw = '{"api_key_pattern": "sk-dup-*", "daily_limit_usd": 1, "action": "block", "daily_limit_usd": 1000}'
    const r = await admin(t.url, 'POST', '/budgets/rules', { raw, headers: JSON_TYPE })
    expect(r.status, r.text).toBe(400)
    expect(r.json().error).toEqual(refusal('daily_limit_usd'))
    const rules = (await admin(t.url, 'GET', '/budgets/rules')).json() as { api_key_pattern: string }[]
    expect(rules.map((x) => x.api_key_pattern)).not.toContain('sk-dup-*')
    // A key named once in the rule and once inside a value is no repeat.
    const once = '{"api_key_pattern": "sk-once-*", "action": "warn", "daily_limit_usd": 1, "tenant": "daily_limit_usd"}'
    expect((await admin(t.url, 'POST', '/budgets/rules', { raw: once, headers: JSON_TYPE })).status).toBe(201)
  })
})
