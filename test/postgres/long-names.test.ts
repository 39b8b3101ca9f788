import { describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * A budget rule's pattern and a runtime price's model name are identities PostgreSQL indexes; one
 * of several thousand characters was more than its index takes, and the insert failed as a 500
 * `internal` (SQLite stored it). Both are capped at 1000 characters, a 400 naming the field on both
 * stores alike.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }) })

const TOKEN = 'admin-token-for-long-names-0123456789'
const T = { authorization: `Bearer ${TOKEN}` }

/** Random text of `n` characters (incompressible: PostgreSQL compresses a run of one letter small enough for its index). */
function noise(n: number): string {
  let s = ''
  while (s.length < n) s += Math.random().toString(36).slice(2)
  return s.slice(0, n)
}

async function checkLong(url: string): Promise<void> {
  const put = (model: string) =>
    request(`${url}/api/admin/prices/openai/${model}`, { method: 'PUT', headers: { ...T, 'content-type': 'application/json' }, body: '{"input_mtok":1,"output_mtok":1}' })
  const post = (pattern: string) =>
    request(`${url}/api/admin/budgets/rules`, {
      method: 'POST', headers: { ...T, 'content-type': 'application/json' }, body: JSON.stringify({ api_key_pattern: pattern, daily_limit_usd: 1, action: 'block' }),
    })
  const longModel = await put(noise(7000))
  expect(longModel.status, String(longModel.body).slice(0, 200)).toBe(400)
  expect(longModel.json().error).toMatchObject({ type: 'invalid_request', param: 'model' })
  const longRule = await post(`sk-${noise(7000)}*`)
  expect(longRule.status, String(longRule.body).slice(0, 200)).toBe(400)
  expect(longRule.json().error).toMatchObject({ type: 'invalid_request', param: 'api_key_pattern' })
  expect(longRule.json().error.message).toContain('at most 1000 characters')
  // At the bound, both are stored.
  expect((await put(noise(1000))).status).toBe(200)
  expect((await post(`sk-${noise(996)}*`)).status).toBe(201)
  expect((await request(`${url}/api/admin/budgets/rules`, { headers: T })).json()).toHaveLength(1)
  expect((await request(`${url}/api/admin/prices`, { headers: T })).json().prices).toHaveLength(1)
}

describe("a rule's pattern or a price's model name too long for PostgreSQL's index", () => {
  it('is a 400 naming it on PostgreSQL, never a 500', async () => {
    const t = await h.server({ config: { admin: { enabled: true, token: TOKEN } } })
    await checkLong(t.url)
  })

  it('is the same 400 on SQLite', async () => {
    const t = await h.server({ url: null, config: { admin: { enabled: true, token: TOKEN } } })
    await checkLong(t.url)
  })
})
