import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { useAliceTeam } from './alice-team'

/**
 * A member's imported Codex call re-classed as a plan's (its rollout named the plan after the call
 * was imported as money: test/import/codex-plan-later.test.ts) is sent again as its revision, with
 * the plan's provider and billing. The team server took the new provider for another call under a
 * reused id (rejected, "the sending Burnrate's ledger seems to have started again") and kept it as
 * money; it now takes the revision: no money, the plan's value, one request still, under the plan's provider.
 */
const ALICE = 'team-token-alice-reclassed-7c2e'
const h = useAliceTeam(ALICE)
const { ingest } = h

function call(id: number, cost: number, over: Partial<IngestCall> & { revision?: number } = {}): IngestCall {
  return h.call(id, cost, {
    provider: 'openai', model: 'gpt-5-codex', api_key_hash: '', key_hint: '', agent: 'codex', session: 'abc', input_tokens: 5000, output_tokens: 400,
    response_id: '', source: 'import', billing: 'api', project: '/home/dev/x', ...over,
  })
}

async function totals(): Promise<{ requests: number; spend: number; providers: [string, number, number][] }> {
  const summary = (await request(`${h.team.url}/api/dashboard/summary`)).json()
  const costs = (await request(`${h.team.url}/api/dashboard/costs?group_by=provider&range=24h`)).json()
  return { requests: summary.today_requests, spend: summary.today_spend_usd, providers: costs.rows.map((r: any) => [r.key, r.requests, r.cost_usd]) }
}

describe("a member's imported call re-classed as a plan's", () => {
  it('is revised on the team server: no money, one request under the plan\'s provider', async () => {
    expect((await ingest([call(1, 0.25)])).json()).toMatchObject({ accepted: 1, rejected: [] })
    expect(await totals()).toEqual({ requests: 1, spend: 0.25, providers: [['openai', 1, 0.25]] })

    expect((await ingest([call(1, 0.25, { revision: 1, provider: 'chatgpt', billing: 'subscription' })])).json()).toMatchObject({ revised: 1, rejected: [] })
    expect(ledgerRows(h.team.dbFile).map((r: any) => [r.origin_id, r.provider, r.billing, r.cost_usd])).toEqual([[1, 'chatgpt', 'subscription', 0.25]])
    expect(await totals()).toEqual({ requests: 1, spend: 0, providers: [['chatgpt', 1, 0]] })
  })

  it('an older revision of it as money, arriving late, is a duplicate: counted once, re-classed still', async () => {
    expect((await ingest([call(3, 0.25)])).json()).toMatchObject({ accepted: 1, rejected: [] })
    // Re-priced on the member, then re-classed as the plan's.
    expect((await ingest([call(3, 0.3, { revision: 1 })])).json()).toMatchObject({ revised: 1, rejected: [] })
    expect((await ingest([call(3, 0.3, { revision: 2, provider: 'chatgpt', billing: 'subscription' })])).json()).toMatchObject({ revised: 1, rejected: [] })
    const before = await totals()
    // The re-priced revision and the call as first recorded, both as money, arriving late (a resend).
    expect((await ingest([call(3, 0.3, { revision: 1 })])).json()).toEqual({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    expect((await ingest([call(3, 0.25)])).json()).toEqual({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    expect(ledgerRows(h.team.dbFile).filter((r: any) => r.origin_id === 3).map((r: any) => [r.provider, r.billing, r.cost_usd, r.revision]))
      .toEqual([['chatgpt', 'subscription', 0.3, 2]])
    expect(await totals()).toEqual(before)
    // A later revision of it as the plan's still replaces it.
    expect((await ingest([call(3, 0.35, { revision: 3, provider: 'chatgpt', billing: 'subscription' })])).json()).toMatchObject({ revised: 1, rejected: [] })
    expect(ledgerRows(h.team.dbFile).find((r: any) => r.origin_id === 3)).toMatchObject({ provider: 'chatgpt', billing: 'subscription', cost_usd: 0.35, revision: 3 })
  })

  it('a proxied call sent again with another provider is still another call under a reused id', async () => {
    expect((await ingest([call(2, 0.5, { source: 'proxy' })])).json()).toMatchObject({ accepted: 1, rejected: [] })
    const other = (await ingest([call(2, 0.5, { source: 'proxy', revision: 1, provider: 'chatgpt', billing: 'subscription' })])).json()
    expect(other.rejected).toHaveLength(1)
    expect(ledgerRows(h.team.dbFile).find((r: any) => r.origin_id === 2)).toMatchObject({ provider: 'openai', billing: 'api' })
  })
})
