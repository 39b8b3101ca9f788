import { afterAll, beforeAll, expect, it } from 'vitest'
import { NANO_FIXTURE, chat, replayJson } from '../budgets/support'
import { type MockUpstream, startMockUpstream } from '../support/mock-upstream'
import { type TestServer, startTestServer } from '../support/server'
import { ADMIN_CONFIG, admin } from './support'

let upstream: MockUpstream
let t: TestServer

beforeAll(async () => {
  upstream = await startMockUpstream()
  replayJson(upstream, NANO_FIXTURE)
  t = await startTestServer({ ...ADMIN_CONFIG, budgets: { rules: [{ api_key_pattern: 'sk-cfg-*', daily_limit_usd: 100, action: 'block' }] } }, upstream.url)
})
afterAll(async () => {
  await t.cleanup()
  await upstream.close()
})

it('runtime rules survive a real restart on the same database, and so does a deletion', async () => {
  const keep = { api_key_pattern: 'sk-cfg-*', daily_limit_usd: 0.000123456789, monthly_limit_usd: 0, action: 'block', soft_limit_pct: 0.25 }
  const drop = { api_key_pattern: 'sk-drop-*', daily_limit_usd: 0, action: 'block' }
  expect((await admin(t.url, 'POST', '/budgets/rules', { body: keep })).status).toBe(201)
  expect((await admin(t.url, 'POST', '/budgets/rules', { body: drop })).status).toBe(201)
  expect((await admin(t.url, 'DELETE', `/budgets/rules?pattern=${encodeURIComponent('sk-drop-*')}`)).status).toBe(204)
  const before = (await admin(t.url, 'GET', '/budgets/rules')).json()

  t = await t.restart()

  const after = (await admin(t.url, 'GET', '/budgets/rules')).json()
  expect(after).toEqual(before)
  expect(after.map((r: any) => [r.api_key_pattern, r.source, r.overridden])).toEqual([
    ['sk-cfg-*', 'runtime', false],
    ['sk-cfg-*', 'config', true],
  ])
  expect(after[0]).toMatchObject(keep)
  // Enforced from the first call after the restart: the runtime rule, not the config one.
  const r = await chat(t, 'sk-cfg-aaaaaaaaaaaa-0001')
  expect(r.status).toBe(429)
  expect(r.json().error).toMatchObject({ api_key_pattern: 'sk-cfg-*', period: 'monthly', limit_usd: 0 })
  expect((await chat(t, 'sk-drop-aaaaaaaaaaaa-0001')).status).toBe(200)
})
