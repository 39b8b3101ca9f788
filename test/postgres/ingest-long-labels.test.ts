import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { postJson, request } from '../support/http'
import { usePostgres } from '../support/pg-harness'

/**
 * POST /api/ingest of a call whose names are long in bytes (1,000 CJK characters: ingest takes up
 * to 1,000 characters, 3,000 bytes of UTF-8). On a PostgreSQL team server the batch's insert failed
 * (more than a btree index entry holds: the calls' tenant, session and response_id indexes, the
 * dashboard's session and breakdown rollups) and ingest answered 503 "send them again": the member
 * sent the same batch again for good, and none of its later calls reached the team server. Names
 * are now cut to 200 characters, as the proxy cuts the names it records, on both stores alike.
 */
const h = usePostgres({ upstream: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' }) })

const ALICE = 'team-token-alice-7f3c9a1e5b'
const LABELS = ['tenant', 'agent', 'session', 'model', 'project', 'provider', 'response_id'] as const

/** `n` CJK characters (three bytes each in UTF-8), not a run PostgreSQL could compress. */
function wide(n: number): string {
  return Array.from({ length: n }, () => String.fromCodePoint(0x4e00 + Math.floor(Math.random() * 20_000))).join('')
}

function call(id: number, over: Partial<IngestCall> = {}): IngestCall {
  return {
    id, t: new Date(Date.now() - 1000).toISOString(), provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_hash: keyHash('sk-ant-wide-0000001'),
    tenant: '', agent: 'claude-code', session: 's-1', status: 200, streamed: true, input_tokens: 10, output_tokens: 3, cache_read_tokens: 0,
    cache_write_tokens: 0, reasoning_tokens: 0, cost_usd: 0.25, priced: true, estimated: false, latency_ms: 5, response_id: `msg_${id}`,
    source: 'proxy', billing: 'api', project: '', member: '', ...over,
  }
}

async function check(url: string): Promise<void> {
  const names = Object.fromEntries(LABELS.map((f) => [f, wide(1000)])) as Record<(typeof LABELS)[number], string>
  const auth = { authorization: `Bearer ${ALICE}` }
  const first = await postJson(`${url}/api/ingest`, { calls: [call(1, names), call(2)] }, auth)
  expect(first.status, String(first.body)).toBe(200)
  expect(first.json()).toMatchObject({ accepted: 2, duplicates: 0, rejected: [] })
  // The member's next batch is taken too.
  const next = await postJson(`${url}/api/ingest`, { calls: [call(3)] }, auth)
  expect(next.json()).toMatchObject({ accepted: 1 })
  // Stored with each name cut to its first 200 characters, and every dollar counted.
  const calls = (await request(`${url}/api/dashboard/export?range=24h`)).json().calls as IngestCall[]
  expect(calls).toHaveLength(3)
  const wideCall = calls.find((c) => c.cost_usd === 0.25 && c.session !== 's-1')!
  for (const f of LABELS) expect(wideCall[f], f).toBe(names[f].slice(0, 200))
  const summary = (await request(`${url}/api/dashboard/summary`)).json()
  expect(summary.today_spend_usd).toBeCloseTo(0.75, 12)
  const sessions = (await request(`${url}/api/dashboard/sessions`)).json().sessions as { session: string }[]
  expect(sessions.map((s) => s.session).sort()).toEqual([names.session.slice(0, 200), 's-1'].sort())
}

describe('ingest of names long in bytes', () => {
  const config = { timezone: 'UTC', team: { members: [{ name: 'alice', token: ALICE }] } }

  it('stores the call on PostgreSQL, names cut to 200 characters, rather than answering 503 for good', async () => {
    const t = await h.server({ config })
    await check(t.url)
  })

  it('stores it the same on SQLite', async () => {
    const t = await h.server({ url: null, config })
    await check(t.url)
  })
})
