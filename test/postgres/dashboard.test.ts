import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * Two instances on one PostgreSQL database serve one dashboard: a call recorded by either
 * appears in both answers, and the rollups they write together equal the calls.
 */

const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }),
})

const KEY = 'sk-pg-dashboard-KEY-000000000001'

describe('two instances on one PostgreSQL database', () => {
  it('show every call either recorded, in both dashboards, with rollups equal to the calls', async () => {
    const url = h.database()
    const a = await h.server({ url })
    const b = await h.server({ url })
    const sends: Promise<unknown>[] = []
    for (let i = 0; i < 40; i++) {
      const t = i % 2 === 0 ? a : b
      sends.push(postJson(`${t.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, {
        authorization: `Bearer ${KEY}`, 'x-burnrate-session': `s${i % 4}`,
      }))
    }
    const answers = (await Promise.all(sends)) as { status: number }[]
    expect(answers.every((r) => r.status === 200)).toBe(true)
    expect(await a.server.ledger.flushed()).toBe(true)
    expect(await b.server.ledger.flushed()).toBe(true)

    const exported = (await request(`${a.url}/api/dashboard/export?range=24h`)).json() as { calls: { cost_usd: number }[] }
    expect(exported.calls).toHaveLength(40)
    const cost = exported.calls.reduce((s, c) => s + c.cost_usd, 0)
    expect(cost).toBeGreaterThan(0)
    for (const t of [a, b]) {
      await eventually(async () => {
        const s = (await request(`${t.url}/api/dashboard/summary`)).json() as { today_requests: number; today_spend_usd: number }
        expect(s.today_requests).toBe(40)
        expect(Math.abs(s.today_spend_usd - cost)).toBeLessThan(1e-9 * cost)
        return true
      })
      const sessions = (await request(`${t.url}/api/dashboard/sessions`)).json() as { sessions: { requests: number }[] }
      expect(sessions.sessions.map((x) => x.requests).reduce((x, y) => x + y, 0)).toBe(40)
    }
  })
})
