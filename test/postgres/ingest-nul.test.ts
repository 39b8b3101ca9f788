import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * POST /api/ingest of a call whose names hold a NUL byte (`acme\u0000corp`). PostgreSQL text cannot
 * hold one, and its ledger dropped it (`acmecorp`), while a SQLite team server stored the name as
 * sent: the same member's call was the tenant `acmecorp` on one store and, on the other, a tenant
 * no dashboard filter or budget rule could name (a NUL in a parameter is a 400). Ingest now drops
 * NUL bytes from every text field before storing, on both stores alike.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }) })

const ALICE = 'team-token-alice-9d2e4b7a1c'
const NAMES = ['tenant', 'agent', 'session', 'model', 'project', 'provider', 'response_id'] as const

function call(id: number, over: Partial<IngestCall> = {}): IngestCall {
  return {
    id, t: new Date(Date.now() - 1000).toISOString(), provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_hash: keyHash('sk-ant-nul-0000001'),
    tenant: '', agent: 'claude-code', session: 's-1', status: 200, streamed: true, input_tokens: 10, output_tokens: 3, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.25, priced: true, estimated: false, latency_ms: 5, response_id: `msg_${id}`,
    source: 'proxy', billing: 'api', project: '', member: '', ...over,
  }
}

async function check(url: string): Promise<void> {
  const sent = Object.fromEntries(NAMES.map((f) => [f, `\u0000${f}\u0000of\u0000alice\u0000`])) as Record<(typeof NAMES)[number], string>
  const res = await postJson(`${url}/api/ingest`, { calls: [call(1, { ...sent, error: 'upstream\u0000 said no', status: 500 })] }, { authorization: `Bearer ${ALICE}` })
  expect(res.status, String(res.body)).toBe(200)
  expect(res.json()).toMatchObject({ accepted: 1, rejected: [] })
  const calls = (await request(`${url}/api/dashboard/export?range=24h`)).json().calls as (IngestCall & { error?: string })[]
  expect(calls).toHaveLength(1)
  for (const f of NAMES) expect(calls[0][f], f).toBe(`${f}ofalice`)
  // The tenant is one a dashboard filter can name.
  const costs = (await request(`${url}/api/dashboard/costs?group_by=tenant&range=24h&tenant=tenantofalice`)).json()
  expect(costs.rows.map((r: { key: string }) => r.key)).toEqual(['tenantofalice'])
}

describe('ingest of names holding a NUL byte', () => {
  const config = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } }

  it('stores them without it on PostgreSQL', async () => {
    const t = await h.server({ config })
    await check(t.url)
  })

  it('stores them the same on SQLite', async () => {
    const t = await h.server({ url: null, config })
    await check(t.url)
  })
})
