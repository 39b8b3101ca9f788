import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { eventually, postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * `burnrate_spend_usd` reads the ledger's in-memory spend, which a PostgreSQL instance reads from
 * the database once it has it ready (the schema checked, then every instance's calls of today and
 * this month), without holding up start-up. Scraped before that, it said $0: every restart of an
 * instance showed today's spend falling to nothing and rising again (an alert on it resolved and
 * fired again), while the dashboard, reading the database, showed the right amount.
 */

const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }) })

const gauge = (text: string, period: string): number | null => {
  const line = text.split('\n').find((l) => l.startsWith(`burnrate_spend_usd{period="${period}"}`))
  return line === undefined ? null : Number(line.split(' ').at(-1))
}

describe('burnrate_spend_usd on PostgreSQL, scraped as an instance starts', () => {
  it("is every instance's spend already stored, as the dashboard says, not $0", async () => {
    const url = h.database()
    const config = { timezone: 'UTC', metrics: { enabled: true } }
    const a = await h.server({ url, config })
    for (let i = 0; i < 3; i++) expect((await postJson(`${a.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-gauge-0001' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    const stored = gauge((await request(`${a.url}/metrics`)).text, 'today')!
    expect(stored).toBeGreaterThan(0)

    const b = await h.server({ url, config })
    // The first scrape, as Prometheus's first after the start.
    const text = (await request(`${b.url}/metrics`)).text
    const summary = (await request(`${b.url}/api/dashboard/summary`)).json()
    expect(summary.today_spend_usd).toBeCloseTo(stored, 12)
    expect(gauge(text, 'today')).toBeCloseTo(stored, 12)
    expect(gauge(text, 'month')).toBeCloseTo(stored, 12)
  })

  it('has no sample while the stored spend cannot be read (PostgreSQL away at the start), then the right one', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', metrics: { enabled: true } }
    const a = await h.server({ url, config })
    expect((await postJson(`${a.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-gauge-0002' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    const stored = gauge((await request(`${a.url}/metrics`)).text, 'today')!
    expect(stored).toBeGreaterThan(0)

    h.pg.stopServer()
    let b
    try {
      b = await h.server({ url, config })
      const text = (await request(`${b.url}/metrics`)).text
      expect(text).toContain('# TYPE burnrate_calls_total counter')
      // Not $0: nothing, until it is known.
      expect(gauge(text, 'today')).toBeNull()
      expect(gauge(text, 'month')).toBeNull()
    } finally {
      h.pg.startServer()
    }
    const url2 = b.url
    await eventually(async () => {
      const v = gauge((await request(`${url2}/metrics`)).text, 'today')
      return v !== null && Math.abs(v - stored) < 1e-12 ? v : undefined
    }, 90_000)
  }, 120_000)
})
