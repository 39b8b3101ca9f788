// @vitest-environment happy-dom
import { createPinia, setActivePinia } from 'pinia'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type BudgetRule, DEFAULT_RULE_OPTIONS } from '../../../shared/api'
import { err, fakeServer } from '../testing/fake-server'
import { DISABLED_MESSAGE, TOKEN_KEY, useAdmin } from './admin'

const TOKEN = 'right-token'
const rule = (over: Partial<BudgetRule> = {}): BudgetRule => ({
  ...DEFAULT_RULE_OPTIONS,
  api_key_pattern: 'sk-dev-*',
  daily_limit_usd: 5,
  monthly_limit_usd: null,
  action: 'block',
  soft_limit_pct: null,
  source: 'runtime',
  overridden: false,
  created_at: '2026-11-21T18:00:00.000Z',
  ...over,
})

/** An admin API with the contract's auth: 401 without the right bearer token. */
function adminServer(rules: BudgetRule[] = []) {
  const authed = (h: Record<string, string>) => h.authorization === `Bearer ${TOKEN}`
  const unauthorized = err(401, 'unauthorized', 'Missing or wrong admin token.')
  return fakeServer({
    'GET /api/admin/budgets/rules': (r) => (authed(r.headers) ? { body: rules } : unauthorized),
    'GET /api/admin/api-keys': (r) => (authed(r.headers) ? { body: [] } : unauthorized),
    'POST /api/admin/budgets/rules': (r) => {
      if (!authed(r.headers)) return unauthorized
      const b = r.body as BudgetRule
      if (b.api_key_pattern.includes('*') && !b.api_key_pattern.endsWith('*')) return err(400, 'invalid_request', 'api_key_pattern may hold one trailing *.')
      rules.push(rule(b))
      return { status: 201, body: rule(b) }
    },
    'DELETE /api/admin/budgets/rules': (r) => {
      if (!authed(r.headers)) return unauthorized
      const p = r.query.get('pattern')
      const i = rules.findIndex((x) => x.api_key_pattern === p && x.source === 'runtime')
      if (i === -1) {
        return rules.some((x) => x.api_key_pattern === p)
          ? err(409, 'conflict', `The rule ${p} comes from the config file; remove it there.`)
          : err(404, 'not_found', `No runtime rule with pattern ${p}.`)
      }
      rules.splice(i, 1)
      return { status: 204 }
    },
  })
}

beforeEach(() => {
  sessionStorage.clear()
  setActivePinia(createPinia())
})
afterEach(() => vi.unstubAllGlobals())

describe('admin store', () => {
  it('says the admin API is disabled when the server answers 404', async () => {
    fakeServer({})
    const a = useAdmin()
    await a.load()
    expect(a.status).toBe('disabled')
    expect(a.message).toBe(DISABLED_MESSAGE)
  })

  it('asks for the token when there is none, and says so when it is wrong', async () => {
    adminServer()
    const a = useAdmin()
    await a.load()
    expect(a.status).toBe('locked')
    await a.signIn('wrong')
    expect(a.status).toBe('wrong_token')
    expect(a.message).toMatch(/refused/)
  })

  it('keeps the token for this browser session only, and sends it as a bearer token', async () => {
    const server = adminServer([rule()])
    const a = useAdmin()
    await a.signIn(` ${TOKEN} `)
    expect(a.status).toBe('ready')
    expect(a.rules.map((r) => r.api_key_pattern)).toEqual(['sk-dev-*'])
    expect(sessionStorage.getItem(TOKEN_KEY)).toBe(TOKEN)
    expect(localStorage.length).toBe(0)
    expect(server.calls.every((c) => c.headers.authorization === `Bearer ${TOKEN}`)).toBe(true)
    // A new store in the same tab picks it up.
    setActivePinia(createPinia())
    expect(useAdmin().token).toBe(TOKEN)
    useAdmin().signOut()
    expect(sessionStorage.getItem(TOKEN_KEY)).toBeNull()
  })

  it('creates and deletes rules, and hands back the server message when one is refused', async () => {
    const server = adminServer()
    const a = useAdmin()
    await a.signIn(TOKEN)
    expect(await a.createRule({ api_key_pattern: 'sk-a-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'warn', soft_limit_pct: 0.8 })).toBeNull()
    const post = server.calls.find((c) => c.method === 'POST')
    expect(post?.headers['content-type']).toBe('application/json')
    expect(post?.body).toEqual({ api_key_pattern: 'sk-a-*', daily_limit_usd: 1, monthly_limit_usd: null, action: 'warn', soft_limit_pct: 0.8 })
    expect(a.rules.map((r) => r.api_key_pattern)).toEqual(['sk-a-*'])
    expect(await a.createRule({ api_key_pattern: 'sk-*-x', daily_limit_usd: 1, action: 'block' })).toMatch(/trailing/)
    expect(await a.deleteRule('sk-a-*')).toBeNull()
    expect(a.rules).toEqual([])
    // "No such rule" is a 404 too; it must not read as "admin API disabled".
    expect(await a.deleteRule('sk-none')).toMatch(/No runtime rule/)
    expect(a.status).toBe('ready')
  })

  it('passes on the 409 for a rule that lives in the config file', async () => {
    adminServer([rule({ api_key_pattern: 'sk-cfg-*', source: 'config' })])
    const a = useAdmin()
    await a.signIn(TOKEN)
    expect(await a.deleteRule('sk-cfg-*')).toMatch(/config file/)
  })
})
