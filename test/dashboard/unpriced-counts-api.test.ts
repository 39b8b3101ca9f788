import { describe, expect, it } from 'vitest'
import { GROUP_BYS } from '../../src/shared/api'
import { postJson } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import { modelEchoUpstream } from '../support/model-echo'
import type { TestServer } from '../support/server'
import { getJson } from './seed'

/**
 * Calls proxied for a model the price data does not know are recorded at $0, `priced: false`.
 * The dashboard API's cost rows, session rows and summary say how many such calls their dollars
 * count as $0 (`unpriced_requests`; `today_unpriced_requests`, `month_unpriced_requests`), a
 * number on every row, 0 where every call had a price: they said "$0.00" and nothing else.
 */

const h = usePostgres({ upstream: modelEchoUpstream('chatcmpl-unpriced-1') })

const UNKNOWN = 'mystery-model-9000'

async function send(t: TestServer, model: string, agent: string, session: string): Promise<void> {
  const r = await postJson(`${t.url}/v1/chat/completions`, { model, messages: [{ role: 'user', content: 'hi' }] }, {
    authorization: 'Bearer sk-unpriced-api-KEY-0000001', 'x-burnrate-agent': agent, 'x-burnrate-session': session, 'x-burnrate-tenant': 'acme',
  })
  expect(r.status, r.text).toBe(200)
}

const api = async (t: TestServer, path: string) => {
  const { status, body } = await getJson(`${t.url}/api/dashboard/${path}`)
  expect(status).toBe(200)
  return body
}

async function check(t: TestServer): Promise<void> {
  for (let i = 0; i < 3; i++) await send(t, UNKNOWN, 'coder', 's-unknown')
  await send(t, 'gpt-4o-mini', 'coder', 's-unknown')
  await send(t, 'gpt-4o-mini', 'reviewer', 's-known')
  expect(await t.server.ledger.flushed()).toBe(true)

  const byModel = await api(t, 'costs?group_by=model&range=24h')
  expect(byModel.rows.find((r: any) => r.key === UNKNOWN)).toMatchObject({ provider: 'openai', requests: 3, cost_usd: 0, unpriced_requests: 3 })
  const known = byModel.rows.find((r: any) => r.key === 'gpt-4o-mini')
  expect(known).toMatchObject({ requests: 2, unpriced_requests: 0 })
  expect(known.cost_usd).toBeGreaterThan(0)

  // Every grouping gives every row the field, a number.
  for (const g of GROUP_BYS) {
    const body = await api(t, `costs?group_by=${g}&range=24h`)
    expect(body.rows.length, g).toBeGreaterThan(0)
    for (const r of body.rows) expect(typeof r.unpriced_requests, `${g} ${r.key}`).toBe('number')
    expect(body.rows.reduce((s: number, r: any) => s + r.unpriced_requests, 0), g).toBe(3)
  }
  const byAgent = await api(t, 'costs?group_by=agent&range=30d&tenant=acme')
  expect(Object.fromEntries(byAgent.rows.map((r: any) => [r.key, r.unpriced_requests]))).toEqual({ coder: 3, reviewer: 0 })
  // The folded (other) row carries the sum of the groups it holds.
  const folded = await api(t, 'costs?group_by=model&range=24h&limit=1')
  expect(folded.rows.map((r: any) => [r.key, r.unpriced_requests])).toEqual([['gpt-4o-mini', 0], ['(other)', 3]])

  const sessions = (await api(t, 'sessions')).sessions
  expect(sessions.find((s: any) => s.session === 's-unknown')).toMatchObject({ agent: 'coder', requests: 4, unpriced_requests: 3 })
  expect(sessions.find((s: any) => s.session === 's-known')).toMatchObject({ requests: 1, unpriced_requests: 0 })

  expect(await api(t, 'summary')).toMatchObject({ today_requests: 5, today_unpriced_requests: 3, month_unpriced_requests: 3 })
  expect(await api(t, 'summary?tenant=other')).toMatchObject({ today_unpriced_requests: 0, month_unpriced_requests: 0 })
}

describe('the dashboard API counts unpriced calls', () => {
  it('on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC' } }))
  })

  it('on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC' } }))
  })
})
