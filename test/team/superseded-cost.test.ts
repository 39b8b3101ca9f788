import { describe, expect, it } from 'vitest'
import type { IngestCall } from '../../src/shared/api'
import { keyHash } from '../dashboard/seed'
import { request } from '../support/http'
import { ledgerRows } from '../support/ledger-rows'
import { useAliceTeam } from './alice-team'

/**
 * An imported call sent with `superseded_by` is no request on the team server, and counts nothing
 * (README: Team). A real member sends it at $0 and 0 tokens; a hand-made sender may not. The
 * SQLite team server kept such a call's cost and tokens in its rollups (the dashboard's spend and
 * costs), where the PostgreSQL team server's report leaves the call out: it is now kept at $0 and
 * 0 tokens, as README says, and counts nothing on either.
 */
const ALICE = 'team-token-alice-superseded-cost-4b1d'
const h = useAliceTeam(ALICE)
const { ingest } = h

function call(id: number, cost: number, over: Partial<IngestCall> & { superseded_by?: number; revision?: number } = {}): IngestCall {
  return h.call(id, cost, {
    provider: 'anthropic', model: 'claude-sonnet-4-5', api_key_hash: keyHash('sk-ant-superseded-cost-1'), key_hint: 'sk-…st-1', agent: 'claude-code',
    session: 's', input_tokens: 100, output_tokens: 10, response_id: `msg_superseded_cost_${id}`, source: 'proxy', billing: 'api', project: '', ...over,
  })
}

async function totals(): Promise<{ requests: number; spend: number; costs: number }> {
  const summary = (await request(`${h.team.url}/api/dashboard/summary`)).json()
  const costs = (await request(`${h.team.url}/api/dashboard/costs?group_by=model&range=24h`)).json()
  return {
    requests: summary.today_requests,
    spend: summary.today_spend_usd,
    costs: costs.rows.reduce((n: number, r: any) => n + r.cost_usd, 0),
  }
}

describe('an ingested call sent superseded with a cost', () => {
  it('counts nothing in the SQLite team server\'s rollups, and is held at $0 and 0 tokens', async () => {
    // The proxied call, then an imported one it superseded, sent with a cost and tokens anyway.
    expect((await ingest([call(1, 0.25)])).json()).toMatchObject({ accepted: 1, rejected: [] })
    expect((await ingest([call(2, 0.5, { source: 'import', superseded_by: 1 })])).json()).toMatchObject({ accepted: 1, rejected: [] })
    // One first sent plain, then its revision superseded, again with a cost.
    expect((await ingest([call(3, 0.125, { source: 'import' })])).json()).toMatchObject({ accepted: 1, rejected: [] })
    expect((await ingest([call(3, 0.0625, { source: 'import', revision: 1, superseded_by: 1 })])).json()).toMatchObject({ revised: 1, rejected: [] })

    expect(await totals()).toEqual({ requests: 1, spend: 0.25, costs: 0.25 })
    const held = ledgerRows(h.team.dbFile).map((r: any) => [r.origin_id, r.cost_usd, r.input_tokens, r.output_tokens, r.superseded_by !== null])
    expect(held).toEqual([
      [1, 0.25, 100, 10, false],
      [2, 0, 0, 0, true],
      [3, 0, 0, 0, true],
    ])
  })

  it('an older revision of it, not superseded, arriving late is a duplicate: it stays superseded, and counts nothing', async () => {
    // Call 3 as first sent (plain, with its cost), again after its superseded revision (a resend).
    expect((await ingest([call(3, 0.125, { source: 'import' })])).json()).toEqual({ accepted: 0, duplicates: 1, revised: 0, rejected: [] })
    expect(await totals()).toEqual({ requests: 1, spend: 0.25, costs: 0.25 })
    expect(ledgerRows(h.team.dbFile).find((r: any) => r.origin_id === 3)).toMatchObject({ cost_usd: 0, input_tokens: 0, revision: 1, superseded_by: expect.any(Number) })
  })
})
