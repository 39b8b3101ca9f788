import { describe, expect, it } from 'vitest'
import { makeCall } from '../dashboard/seed'
import { request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * `costs?group_by=model` past `limit`: the `(other)` row sums models of several providers. Its
 * `provider` was `""`, a provider no call has; the contract's `provider` is a provider's name or
 * null, and the folded row has none, so it is null, on both stores alike.
 */
const h = usePostgres({ upstream: false })

async function check(t: { url: string; server: { ledger: { record(c: unknown): void; flushed(): Promise<boolean> } } }): Promise<void> {
  const now = Date.now()
  const models = [['openai', 'gpt-5', 0.5], ['anthropic', 'claude-sonnet-4-5', 0.3], ['google', 'gemini-2.5-pro', 0.2], ['openai', 'gpt-4o-mini', 0.1]] as const
  for (const [i, [provider, model, cost]] of models.entries()) t.server.ledger.record(makeCall({ ts: now - 60_000 * (i + 1), provider, model, cost_usd: cost }))
  await t.server.ledger.flushed()
  const r = await request(`${t.url}/api/dashboard/costs?group_by=model&range=24h&limit=2`)
  expect(r.status, r.text).toBe(200)
  const rows = r.json().rows as { key: string; provider: string | null; other?: boolean; requests: number }[]
  expect(rows.map((x) => [x.key, x.provider])).toEqual([['gpt-5', 'openai'], ['claude-sonnet-4-5', 'anthropic'], ['(other)', null]])
  expect(rows[2]).toMatchObject({ other: true, requests: 2 })
  // Grouped by anything else, every row's provider is null, the folded one's too.
  const agents = (await request(`${t.url}/api/dashboard/costs?group_by=provider&range=24h&limit=1`)).json().rows as { provider: string | null }[]
  expect(agents.map((x) => x.provider)).toEqual([null, null])
}

describe('the (other) row of costs by model', () => {
  it('has provider null on PostgreSQL', async () => {
    await check(await h.server({ config: { timezone: 'UTC' } }))
  })

  it('has provider null on SQLite', async () => {
    await check(await h.server({ url: null, config: { timezone: 'UTC' } }))
  })
})
