import { describe, expect, it } from 'vitest'
import { fixture } from '../support/fixtures'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * `burnrate_budget_utilization_ratio` reads the budget meters, which a PostgreSQL instance fills
 * from every instance's stored calls once it has read them, without holding up start-up. Scraped
 * before that read, a rule whose key was at 92% of its daily limit said 0: each restart resolved a
 * `>= 0.8` alert on it (the README's) and fired it again a scrape later.
 */

const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: fixture('openai-chat/chat-nonstream-cached.json') }) })

const ratio = (text: string): number | null => {
  const line = text.split('\n').find((l) => l.startsWith('burnrate_budget_utilization_ratio{rule="sk-start-*",period="daily"'))
  return line === undefined ? null : Number(line.split(' ').at(-1))
}

describe('burnrate_budget_utilization_ratio on PostgreSQL, scraped as an instance starts again', () => {
  it('is what the stored calls make it, not 0', async () => {
    const url = h.database()
    const config = { timezone: 'UTC', metrics: { enabled: true }, budgets: { rules: [{ api_key_pattern: 'sk-start-*', daily_limit_usd: 0.001, action: 'warn' }] } }
    const a = await h.server({ url, config })
    for (let i = 0; i < 3; i++) expect((await postJson(`${a.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-start-0001' })).status).toBe(200)
    expect(await a.server.ledger.flushed()).toBe(true)
    const before = ratio((await request(`${a.url}/metrics`)).text)!
    expect(before).toBeGreaterThan(0.8)
    await a.stop()

    const again = await h.server({ url, config, dir: a.dir })
    // The first scrape, as Prometheus's first after the restart: the ratio, and the limit with it.
    const text = (await request(`${again.url}/metrics`)).text
    expect(ratio(text)).toBeCloseTo(before, 12)
    expect(text).toContain('burnrate_budget_limit_usd{rule="sk-start-*",period="daily",action="warn"} 0.001')
  })
})
