import { describe, expect, it } from 'vitest'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * A proxied request whose body names its model with a NUL byte (`"gpt-4o\u0000-mini"`, as JSON
 * lets it). PostgreSQL text cannot hold one: its ledger's insert failed and the row went again
 * without it (`gpt-4o-mini`), while SQLite stored the name with the NUL, a model no dashboard
 * filter, price or rule could name (a NUL in a parameter is a 400). Both stores now record the
 * name without it, as ingest stores a member's call.
 */
const ANSWER = { id: 'chatcmpl-nul', object: 'chat.completion', choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } }
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ANSWER) }) })

async function check(url: string): Promise<void> {
  const res = await postJson(`${url}/v1/chat/completions`, { model: 'mystery\u0000-model', messages: [] }, { authorization: 'Bearer sk-nul-model-0000000001', 'x-burnrate-session': 'nul-1' })
  expect(res.status, res.text).toBe(200)
  let calls: { model: string }[] = []
  for (let i = 0; i < 200 && calls.length === 0; i++) {
    calls = (await request(`${url}/api/dashboard/export?range=24h`)).json().calls
    if (calls.length === 0) await new Promise((r) => setTimeout(r, 50))
  }
  expect(calls.map((c) => c.model)).toEqual(['mystery-model'])
  const costs = (await request(`${url}/api/dashboard/costs?group_by=model&range=24h`)).json().rows as { key: string }[]
  expect(costs.map((r) => r.key)).toEqual(['mystery-model'])
  const unpriced = (await request(`${url}/api/dashboard/unpriced`)).json().models as { model: string }[]
  expect(unpriced.map((m) => m.model)).toEqual(['mystery-model'])
}

describe('a proxied model name holding a NUL byte', () => {
  it('is recorded without it on PostgreSQL', async () => {
    const t = await h.server({ config: { timezone: 'UTC' } })
    await check(t.url)
  })

  it('is recorded the same on SQLite', async () => {
    const t = await h.server({ url: null, config: { timezone: 'UTC' } })
    await check(t.url)
  })
})
