import { afterAll, describe, expect, it } from 'vitest'
import { hashKey } from '../../src/main/proxy/attribution'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'
import type { TestServer } from '../support/server'

/**
 * A team server on PostgreSQL reads its members' spend for `burnrate_spend_usd` from the database
 * at each scrape. While PostgreSQL was away that read failed, and with it the whole scrape (500):
 * `burnrate_ledger_writable`, the gauge an alert on "the ledger cannot write" reads, was in no
 * scrape exactly while it was 0. The scrape answers now, without a spend sample it cannot know.
 */
const TOKEN = 'team-token-alice-7f3c9a1e5b'
const h = usePostgres({
  upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"id":"x","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}' }),
})
let team: TestServer
let away = false
afterAll(() => {
  if (away) h.pg.startServer()
})

const sample = (text: string, name: string) => text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'))

describe('a team server on PostgreSQL, scraped while PostgreSQL is away', () => {
  it('answers /metrics, its ledger_writable 0 once a write failed, with no spend sample', async () => {
    team = await h.server({ config: { timezone: 'UTC', metrics: { enabled: true }, team: { members: [{ name: 'alice', token: TOKEN }] } } })
    const call = {
      id: 1, t: new Date().toISOString(), provider: 'openai', model: 'gpt-5-nano', api_key_hash: hashKey('sk-proj-away-0000abcd'), key_hint: 'sk-…abcd',
      tenant: '', agent: 'codex', session: 's', status: 200, streamed: false, input_tokens: 11, output_tokens: 228, cache_read_tokens: 0,
      cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 1.25, priced: true, estimated: false, latency_ms: 100,
    }
    expect((await postJson(`${team.url}/api/ingest`, { calls: [call] }, { authorization: `Bearer ${TOKEN}` })).json()).toMatchObject({ accepted: 1 })
    const before = await request(`${team.url}/metrics`)
    expect(before.status).toBe(200)
    expect(sample(before.text, 'burnrate_spend_usd')).toBe('burnrate_spend_usd{period="today"} 1.25')

    h.pg.stopServer()
    away = true
    // A proxied call the ledger cannot write: it is not writable.
    await postJson(`${team.url}/v1/chat/completions`, { model: 'gpt-4o-mini', messages: [] }, { authorization: 'Bearer sk-proj-away-0000abcd' })
    let text = ''
    for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
      const r = await request(`${team.url}/metrics`)
      expect(r.status, r.text.slice(0, 300)).toBe(200)
      text = r.text
      if (sample(text, 'burnrate_ledger_writable') === 'burnrate_ledger_writable 0') break
    }
    expect(sample(text, 'burnrate_ledger_writable')).toBe('burnrate_ledger_writable 0')
    expect(sample(text, 'burnrate_spend_usd')).toBeUndefined()
  })
})
