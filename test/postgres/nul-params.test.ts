import { describe, expect, it } from 'vitest'
import { request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * A NUL byte (`%00`) in a parameter or a path is bad input, answered in the contract's shape on
 * both stores alike. PostgreSQL's text cannot hold one (the ledger drops them from what it stores),
 * and a query that sent one failed: every dashboard endpoint answered `?tenant=%00` with a 500
 * `internal`, the export cut its download, and the admin API's DELETE and prices 500'd too.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }) })

const TOKEN = 'admin-token-for-nul-tests-0123456789'
const T = { authorization: `Bearer ${TOKEN}` }
const DASHBOARD = ['summary', 'timeseries', 'costs', 'sessions', 'expensive', 'stats', 'unpriced', 'budgets', 'report', 'report?kind=session', 'export', 'export?format=csv', 'plans', 'alerts', 'prices']

async function check(url: string): Promise<void> {
  for (const path of DASHBOARD) {
    for (const [param, value] of [['tenant', '%00'], ['tenant', 'acme%00x'], ['member', '%00'], ['since', '2026-11-01%00']]) {
      const sep = path.includes('?') ? '&' : '?'
      const r = await request(`${url}/api/dashboard/${path}${sep}${param}=${value}`)
      // `member` is read only by costs, expensive and export; elsewhere it is an unknown parameter, ignored.
      if (param === 'member' && !/^(costs|expensive|export)/.test(path)) {
        expect(r.status, `${path} ${param}=${value}`).toBe(200)
        continue
      }
      if (param === 'since' && !/^(report|export)/.test(path)) continue
      expect(r.status, `${path} ${param}=${value}: ${r.body}`).toBe(400)
      expect(r.headers['content-type']).toMatch(/^application\/json/)
      expect(r.json().error).toMatchObject({ type: 'invalid_request', param })
      expect(r.json().error.message).toContain(param)
    }
  }
  // No rule can have such a pattern (a pattern is visible ASCII): the 404 of any pattern no rule has.
  const del = await request(`${url}/api/admin/budgets/rules?pattern=sk-%00*`, { method: 'DELETE', headers: T })
  expect(del.status, String(del.body)).toBe(404)
  expect(del.json().error.type).toBe('not_found')
  // A model name is what a provider names: never one with a NUL.
  const put = await request(`${url}/api/admin/prices/openai/a%00b`, { method: 'PUT', headers: { ...T, 'content-type': 'application/json' }, body: '{"input_mtok":1,"output_mtok":1}' })
  const gone = await request(`${url}/api/admin/prices/openai/a%00b`, { method: 'DELETE', headers: T })
  const reprice = await request(`${url}/api/admin/prices/openai/a%00b/reprice`, { method: 'POST', headers: T })
  for (const r of [put, gone, reprice]) {
    expect(r.status, String(r.body)).toBe(400)
    expect(r.json().error).toMatchObject({ type: 'invalid_request', param: 'model' })
  }
  expect((await request(`${url}/api/admin/prices`, { headers: T })).json().prices).toEqual([])
  // The server answers on as before.
  expect((await request(`${url}/api/dashboard/summary`)).status).toBe(200)
}

describe('a NUL byte in a parameter', () => {
  it('is a 400 naming it on PostgreSQL, never a 500 or a cut download', async () => {
    const t = await h.server({ config: { admin: { enabled: true, token: TOKEN } } })
    await check(t.url)
  })

  it('is the same 400 on SQLite', async () => {
    const t = await h.server({ url: null, config: { admin: { enabled: true, token: TOKEN } } })
    await check(t.url)
  })
})
