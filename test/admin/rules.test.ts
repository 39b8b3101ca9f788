import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_RULE_OPTIONS } from '../../src/shared/api'
import { keyHint } from '../../src/shared/key-hint'
import { startMockUpstream, type MockUpstream } from '../support/mock-upstream'
import { startTestServer, type TestServer } from '../support/server'
import { NANO_FIXTURE, chat, replayJson } from '../budgets/support'
import { ADMIN_CONFIG, admin } from './support'

let upstream: MockUpstream
let t: TestServer

const CONFIG = {
  ...ADMIN_CONFIG,
  budgets: {
    rules: [
      { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-cfg-*', daily_limit_usd: 5, action: 'warn' },
      { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-both-*', daily_limit_usd: 0, action: 'block' },
    ],
  },
}

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer(CONFIG, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

function expectError(r: { status: number; headers: Record<string, unknown>; json(): any }, status: number, type: string) {
  expect(r.status).toBe(status)
  expect(r.headers['content-type']).toMatch(/^application\/json/)
  const e = r.json().error
  expect(e.type).toBe(type)
  expect(typeof e.message).toBe('string')
  return e
}

describe('GET /budgets/rules', () => {
  it('lists config rules with source, overridden and created_at, sorted by pattern', async () => {
    const r = await admin(t.url, 'GET', '/budgets/rules')
    expect(r.status).toBe(200)
    expect(r.json()).toEqual([
      { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-both-*', daily_limit_usd: 0, monthly_limit_usd: null, action: 'block', soft_limit_pct: null, source: 'config', overridden: false, created_at: null },
      { ...DEFAULT_RULE_OPTIONS, api_key_pattern: 'sk-cfg-*', daily_limit_usd: 5, monthly_limit_usd: null, action: 'warn', soft_limit_pct: null, source: 'config', overridden: false, created_at: null },
    ])
  })
})

describe('POST /budgets/rules', () => {
  it('creates a runtime rule (201), then replaces it (200), storing money unrounded', async () => {
    const rule = { api_key_pattern: 'sk-new-*', daily_limit_usd: 0.1 + 0.2, monthly_limit_usd: 12.345678901, action: 'block', soft_limit_pct: 0.8 }
    const before = Date.now()
    const created = await admin(t.url, 'POST', '/budgets/rules', { body: rule })
    expect(created.status).toBe(201)
    const body = created.json()
    expect(body).toEqual({ ...DEFAULT_RULE_OPTIONS, ...rule, source: 'runtime', overridden: false, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/) })
    expect(Date.parse(body.created_at)).toBeGreaterThanOrEqual(before - 1)

    const replaced = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-new-*', monthly_limit_usd: 3, action: 'warn' } })
    expect(replaced.status).toBe(200)
    // A replacement is the whole rule: fields left out are null, not kept from the old one.
    expect(replaced.json()).toMatchObject({ api_key_pattern: 'sk-new-*', daily_limit_usd: null, monthly_limit_usd: 3, action: 'warn', soft_limit_pct: null })
    const list = (await admin(t.url, 'GET', '/budgets/rules')).json()
    expect(list.filter((x: any) => x.api_key_pattern === 'sk-new-*')).toHaveLength(1)
  })

  it('a runtime rule with a config rule\'s pattern overrides it; the list shows both', async () => {
    const r = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-cfg-*', daily_limit_usd: 1, action: 'block' } })
    expect(r.status).toBe(201)
    const list = (await admin(t.url, 'GET', '/budgets/rules')).json().filter((x: any) => x.api_key_pattern === 'sk-cfg-*')
    expect(list.map((x: any) => [x.source, x.overridden])).toEqual([
      ['runtime', false],
      ['config', true],
    ])
  })

  const BAD: [string, unknown, string][] = [
    ['a typo in a field name', { api_key_pattern: 'sk-x-*', daily_limit: 5, action: 'block' }, 'daily_limit'],
    ['a missing pattern', { daily_limit_usd: 5, action: 'block' }, 'api_key_pattern'],
    ['a non-string pattern', { api_key_pattern: 5, daily_limit_usd: 5, action: 'block' }, 'api_key_pattern'],
    ['an empty pattern', { api_key_pattern: '', daily_limit_usd: 5, action: 'block' }, 'api_key_pattern'],
    ['a * inside the pattern', { api_key_pattern: 'sk-*-x', daily_limit_usd: 5, action: 'block' }, 'api_key_pattern'],
    ['two stars', { api_key_pattern: 'sk-**', daily_limit_usd: 5, action: 'block' }, 'api_key_pattern'],
    ['a space in the pattern', { api_key_pattern: 'sk x*', daily_limit_usd: 5, action: 'block' }, 'api_key_pattern'],
    ['a negative limit', { api_key_pattern: 'sk-x-*', daily_limit_usd: -1, action: 'block' }, 'daily_limit_usd'],
    ['a limit as a string', { api_key_pattern: 'sk-x-*', monthly_limit_usd: '5', action: 'block' }, 'monthly_limit_usd'],
    ['no limit at all', { api_key_pattern: 'sk-x-*', daily_limit_usd: null, action: 'block' }, 'monthly_limit_usd'],
    ['an unknown action', { api_key_pattern: 'sk-x-*', daily_limit_usd: 5, action: 'stop' }, 'action'],
    ['a missing action', { api_key_pattern: 'sk-x-*', daily_limit_usd: 5 }, 'action'],
    ['soft_limit_pct over 1', { api_key_pattern: 'sk-x-*', daily_limit_usd: 5, action: 'block', soft_limit_pct: 80 }, 'soft_limit_pct'],
    ['soft_limit_pct under 0', { api_key_pattern: 'sk-x-*', daily_limit_usd: 5, action: 'block', soft_limit_pct: -0.1 }, 'soft_limit_pct'],
    ['an array body', [{ api_key_pattern: 'sk-x-*', daily_limit_usd: 5, action: 'block' }], 'JSON object'],
  ]
  for (const [what, body, named] of BAD) {
    it(`rejects ${what} with a 400 naming ${named}`, async () => {
      const r = await admin(t.url, 'POST', '/budgets/rules', { body })
      const e = expectError(r, 400, 'invalid_request')
      expect(e.message).toContain(named)
    })
  }

  it('rejects a provider scope no provider has (a budget that would never count a call), naming provider', async () => {
    // A provider is matched by its exact name (openai, anthropic, ...): "OpenAI" or "open-ai" matches no call, so
    // this limit of $0 would let every OpenAI call through.
    const key = 'sk-prov-cccccccccccc-0001'
    for (const provider of ['OpenAI', 'open-ai', 'claude*']) {
      const r = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-prov-*', daily_limit_usd: 0, action: 'block', provider } })
      const e = expectError(r, 400, 'invalid_request')
      expect(e.param).toBe('provider')
      expect(e.message).toContain('openai')
      expect((await chat(t, key)).status).toBe(200)
    }
    // Names and prefixes of real providers are rules like any other.
    for (const provider of ['openai', 'open*']) {
      const r = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-prov-*', daily_limit_usd: 0, action: 'block', provider } })
      expect(r.status).toBeLessThan(300)
      expect((await chat(t, key)).status).toBe(429)
    }
    expect((await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-prov-*')}`)).status).toBe(204)
  })

  it('rejects a limit that overflows to Infinity', async () => {
    const r = await admin(t.url, 'POST', '/budgets/rules', { raw: '{"api_key_pattern":"sk-x-*","daily_limit_usd":1e999,"action":"block"}', headers: { 'content-type': 'application/json' } })
    expect(expectError(r, 400, 'invalid_request').message).toContain('daily_limit_usd')
  })

  it('refuses every limit field given as anything but a finite number >= 0, and takes JSON’s own exponent form', async () => {
    // The dashboard's form once sent what Number() made of "0x10" or "1e3"; the API itself takes only JSON numbers.
    const fields = ['daily_limit_usd', 'weekly_limit_usd', 'monthly_limit_usd', 'session_limit_usd'] as const
    for (const field of fields) {
      for (const value of ['5', '0x10', '1e3', '', ' ', true, [5], { usd: 5 }, -0.01]) {
        const r = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-num-*', [field]: value, action: 'block' } })
        const e = expectError(r, 400, 'invalid_request')
        expect(e.param).toBe(field)
        expect(e.message).toContain(`${field} must be a finite number`)
      }
    }
    const r = await admin(t.url, 'POST', '/budgets/rules', { raw: '{"api_key_pattern":"sk-num-*","daily_limit_usd":1e3,"monthly_limit_usd":2.5E-1,"action":"warn"}', headers: { 'content-type': 'application/json' } })
    expect(r.status).toBe(201)
    expect(r.json()).toMatchObject({ daily_limit_usd: 1000, monthly_limit_usd: 0.25 })
    const rules = (await admin(t.url, 'GET', '/budgets/rules')).json() as { api_key_pattern: string }[]
    expect(rules.filter((x) => x.api_key_pattern === 'sk-num-*')).toHaveLength(1)
    expect((await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-num-*')}`)).status).toBe(204)
  })

  it('415 without a JSON content type', async () => {
    const r = await admin(t.url, 'POST', '/budgets/rules', { raw: '{"api_key_pattern":"sk-x-*","daily_limit_usd":1,"action":"block"}', headers: { 'content-type': 'text/plain' } })
    expectError(r, 415, 'unsupported_media_type')
    const none = await admin(t.url, 'POST', '/budgets/rules', { raw: '{}' })
    expectError(none, 415, 'unsupported_media_type')
  })

  it('accepts application/json with a charset', async () => {
    const r = await admin(t.url, 'POST', '/budgets/rules', {
      raw: '{"api_key_pattern":"sk-charset-*","daily_limit_usd":1,"action":"warn"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    expect(r.status).toBe(201)
  })

  it('413 over 64 KiB, 400 for bad JSON, 400 for an empty body', async () => {
    const big = JSON.stringify({ api_key_pattern: 'sk-x-*', daily_limit_usd: 1, action: 'block', pad: 'x'.repeat(64 * 1024) })
    expectError(await admin(t.url, 'POST', '/budgets/rules', { raw: big, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large')
    const bad = await admin(t.url, 'POST', '/budgets/rules', { raw: '{"api_key_pattern": ', headers: { 'content-type': 'application/json' } })
    expect(expectError(bad, 400, 'invalid_request').message).toMatch(/JSON/)
    const empty = await admin(t.url, 'POST', '/budgets/rules', { raw: '', headers: { 'content-type': 'application/json', 'content-length': '0' } })
    expectError(empty, 400, 'invalid_request')
    // No body at all (no Content-Length: curl -X POST -H "Content-Type: application/json"): the header is there, the JSON is not.
    const none = await rawPost(`${t.url}/api/admin/budgets/rules`, { authorization: `Bearer ${ADMIN_CONFIG.admin.token}`, 'content-type': 'application/json' })
    expect(none.status).toBe(400)
    expect(JSON.parse(none.body).error).toMatchObject({ type: 'invalid_request', message: 'The request body is empty; send a JSON object.' })
    // Nothing of these reached the table.
    const list = (await admin(t.url, 'GET', '/budgets/rules')).json()
    expect(list.some((x: any) => x.api_key_pattern === 'sk-x-*')).toBe(false)
  })
})

describe('DELETE /budgets/rules', () => {
  it('204 with no body for a runtime rule, then 404 for the same pattern', async () => {
    await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-del-*', daily_limit_usd: 1, action: 'block' } })
    const r = await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-del-*')}`)
    expect(r.status).toBe(204)
    expect(r.body.length).toBe(0)
    const again = await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-del-*')}`)
    expect(expectError(again, 404, 'not_found').message).toContain('sk-del-*')
  })

  it('400 without pattern, 409 for a pattern only the config has', async () => {
    expect(expectError(await admin(t.url, 'DELETE', '/budgets/rules'), 400, 'invalid_request').message).toContain('pattern')
    const conflict = await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-both-*')}`)
    expect(expectError(conflict, 409, 'conflict').message).toMatch(/config/)
  })
})

describe('immediate effect on proxied calls', () => {
  it('a created rule applies to the very next call; deleting it lets the next call through', async () => {
    const key = 'sk-live-aaaaaaaaaaaa-0001'
    expect((await chat(t, key)).status).toBe(200)
    const created = await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: key, daily_limit_usd: 0, action: 'block' } })
    expect(created.status).toBe(201)
    const before = upstream.requests.length
    const blocked = await chat(t, key)
    expect(blocked.status).toBe(429)
    expect(blocked.json().error.api_key_pattern).toBe(keyHint(key))
    expect(upstream.requests.length).toBe(before)
    expect((await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent(key)}`)).status).toBe(204)
    expect((await chat(t, key)).status).toBe(200)
  })

  it('runtime beats config even when the config rule is more specific', async () => {
    // Config: sk-both-* blocks (limit 0). A runtime "*" rule outranks it.
    const key = 'sk-both-bbbbbbbbbbbb-0001'
    expect((await chat(t, key)).status).toBe(429)
    expect((await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: '*', daily_limit_usd: 100, action: 'block' } })).status).toBe(201)
    expect((await chat(t, key)).status).toBe(200)
    // Among runtime rules the most specific wins: exact over prefix, longer prefix over shorter.
    await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-both-b*', daily_limit_usd: 0, action: 'block' } })
    const r = await chat(t, key)
    expect(r.status).toBe(429)
    expect(r.json().error.api_key_pattern).toBe('sk-both-b*')
    await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-both-bb*', daily_limit_usd: 100, action: 'block' } })
    expect((await chat(t, key)).status).toBe(200)
    await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: key, daily_limit_usd: 0, action: 'block' } })
    expect((await chat(t, key)).json().error.api_key_pattern).toBe(keyHint(key))
    for (const p of ['*', 'sk-both-b*', 'sk-both-bb*', key]) {
      expect((await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent(p)}`)).status).toBe(204)
    }
    expect((await chat(t, key)).json().error.api_key_pattern).toBe('sk-both-*')
  })

  it('deleting a runtime rule that overrode a config rule brings the config rule back', async () => {
    const key = 'sk-both-cccccccccccc-0001'
    await admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: 'sk-both-*', daily_limit_usd: 100, action: 'block' } })
    expect((await chat(t, key)).status).toBe(200)
    expect((await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-both-*')}`)).status).toBe(204)
    expect((await chat(t, key)).status).toBe(429)
  })
})

describe('concurrent writes', () => {
  it('never lose a rule: 40 parallel POSTs and 20 parallel DELETEs leave exactly what the database holds', async () => {
    const patterns = Array.from({ length: 40 }, (_, i) => `sk-par-${String(i).padStart(2, '0')}-*`)
    const posts = await Promise.all(
      patterns.map((p, i) => admin(t.url, 'POST', '/budgets/rules', { body: { api_key_pattern: p, daily_limit_usd: i, action: 'block' } })),
    )
    expect(posts.map((r) => r.status)).toEqual(patterns.map(() => 201))
    const gone = patterns.filter((_, i) => i % 2 === 0)
    const dels = await Promise.all(gone.map((p) => admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent(p)}`)))
    expect(dels.map((r) => r.status)).toEqual(gone.map(() => 204))
    const listed = (await admin(t.url, 'GET', '/budgets/rules')).json().filter((x: any) => x.api_key_pattern.startsWith('sk-par-'))
    expect(listed.map((x: any) => x.api_key_pattern)).toEqual(patterns.filter((_, i) => i % 2 === 1))
  })
})

/** A POST with these headers and no body, no Content-Length nor chunked encoding (as curl sends it). */
function rawPost(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname, () => {
      sock.write(`POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`)
    })
    let data = ''
    sock.on('data', (d) => (data += d))
    sock.on('end', () => resolve({ status: Number(data.split(' ')[1]), body: data.slice(data.indexOf('\r\n\r\n') + 4) }))
    sock.on('error', reject)
  })
}
