import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../src/main/config/load'
import { silentLogger } from '../../src/main/log'
import { createBurnrate } from '../../src/main/server/server'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from '../support/http'
import { startTestServer, type TestServer } from '../support/server'
import { ADMIN_CONFIG, TOKEN, admin } from './support'

const PATHS: [string, string][] = [
  ['GET', '/budgets/rules'],
  ['POST', '/budgets/rules'],
  ['DELETE', '/budgets/rules?pattern=x'],
  ['GET', '/api-keys'],
  ['GET', '/providers'],
]

describe('admin disabled (the default)', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer({})
  })
  afterAll(() => t.cleanup())

  it('answers every /api/admin path 404 not_found, token or not', async () => {
    for (const [method, path] of PATHS) {
      for (const token of [TOKEN, null]) {
        const r = await admin(t.url, method, path, { token, body: method === 'POST' ? {} : undefined })
        expect(r.status).toBe(404)
        expect(r.json().error.type).toBe('not_found')
      }
    }
  })
})

describe('admin enabled', () => {
  let t: TestServer
  beforeAll(async () => {
    t = await startTestServer(ADMIN_CONFIG)
  })
  afterAll(() => t.cleanup())

  const BAD_AUTH: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-token' }],
    ['a token that is a prefix of the right one', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['the right token with a suffix', { authorization: `Bearer ${TOKEN}x` }],
    ['Basic auth', { authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` }],
    ['a bare token without Bearer', { authorization: TOKEN }],
    ['Bearer with nothing after it', { authorization: 'Bearer ' }],
  ]
  for (const [what, headers] of BAD_AUTH) {
    it(`401 with WWW-Authenticate: Bearer for ${what}, on every endpoint`, async () => {
      for (const [method, path] of PATHS) {
        const r = await request(`${t.url}/api/admin${path}`, {
          method,
          headers: { ...headers, 'content-type': 'application/json' },
          body: method === 'POST' ? JSON.stringify({ api_key_pattern: 'sk-a-*', daily_limit_usd: 1, action: 'block' }) : undefined,
        })
        expect(r.status).toBe(401)
        expect(r.headers['www-authenticate']).toBe('Bearer')
        expect(r.headers['content-type']).toMatch(/^application\/json/)
        expect(r.json().error.type).toBe('unauthorized')
        expect(r.text).not.toContain(TOKEN)
      }
      // Nothing was created by the refused POSTs.
      expect((await admin(t.url, 'GET', '/budgets/rules')).json()).toEqual([])
    })
  }

  it('accepts the scheme in any case', async () => {
    const r = await request(`${t.url}/api/admin/providers`, { headers: { authorization: `bearer ${TOKEN}` } })
    expect(r.status).toBe(200)
  })

  it('sends no CORS headers, even to a cross-origin request or a preflight', async () => {
    const origin = 'http://127.0.0.1:5173'
    const ok = await admin(t.url, 'GET', '/budgets/rules', { headers: { origin } })
    const pre = await request(`${t.url}/api/admin/budgets/rules`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization' },
    })
    for (const r of [ok, pre]) {
      for (const h of Object.keys(r.headers)) expect(h.startsWith('access-control-')).toBe(false)
    }
  })

  it('an unknown admin path is 401 without the token and 404 with it', async () => {
    expect((await admin(t.url, 'GET', '/nothing', { token: null })).status).toBe(401)
    const r = await admin(t.url, 'GET', '/nothing')
    expect(r.status).toBe(404)
    expect(r.json().error.type).toBe('not_found')
  })
})

describe('start-up', () => {
  it('refuses admin.enabled: true without a token, with a message naming admin.token', () => {
    const dir = mkdtempSync(join(tmpdir(), 'burnrate-admin-'))
    try {
      for (const text of ['admin:\n  enabled: true\n', 'admin:\n  enabled: true\n  token: ""\n']) {
        const file = join(dir, 'config.yaml')
        writeFileSync(file, text)
        expect(() => loadConfig({ config: file, dataDir: dir }, {})).toThrow(/admin\.token/)
      }
      // A token of blanks is no token either (checked when the admin API is installed).
      const file = join(dir, 'config.yaml')
      writeFileSync(file, 'admin:\n  enabled: true\n  token: "   "\n')
      const config = loadConfig({ config: file, dataDir: dir }, {})
      let err: unknown
      try {
        createBurnrate(config, { log: silentLogger })
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(ConfigError)
      expect((err as Error).message).toMatch(/admin\.token/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
